package zkdata

// Client quota entities (docs/quotas.md): /config/users/<user>, /config/clients/<client-id>
// and /config/users/<user>/clients/<client-id>, each name sanitized as Kafka's Sanitizer does
// or the literal <default>; the change notification's entity_path is the path below /config.

// SanitizeEntityName is a quota entity's znode name: <default> as is, else SanitizeUser.
func SanitizeEntityName(name string) string {
	if name == DefaultBrokerEntity {
		return name
	}
	return SanitizeUser(name)
}

// DesanitizeEntityName reverses SanitizeEntityName.
func DesanitizeEntityName(name string) (string, error) {
	if name == DefaultBrokerEntity {
		return name, nil
	}
	return DesanitizeUser(name)
}

// QuotaEntity is the entity path of a quota entity: user and client desanitized names or
// <default>; an empty one is a level the entity lacks (users/<u>, clients/<c>).
func QuotaEntity(user, client string) string {
	switch {
	case user != "" && client != "":
		return "users/" + SanitizeEntityName(user) + "/clients/" + SanitizeEntityName(client)
	case user != "":
		return "users/" + SanitizeEntityName(user)
	}
	return "clients/" + SanitizeEntityName(client)
}

// QuotaConfigPath is the config znode of a quota entity: /config/<QuotaEntity>.
func QuotaConfigPath(user, client string) string { return "/config/" + QuotaEntity(user, client) }

// UserClientsPath is /config/users/<user>/clients, the parent of a user's client entities.
func UserClientsPath(user string) string {
	return PathConfigUsers + "/" + SanitizeEntityName(user) + "/clients"
}
