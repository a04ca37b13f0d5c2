package agent

import (
	"errors"
	"sort"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/sirupsen/logrus"

	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// OnQuotaConfig registers f to receive the client quota entities (docs/quotas.md; Kafka's
// QuotaConfigHandler for users, clients and users/<u>/clients/<c>): f(user, client, cfg) with
// the desanitized names or <default>, "" for a level the entity lacks (users/<u> has client "",
// clients/<c> user ""), and the entity's complete config (empty when its znode is gone), for
// every entity at the first scan and then for each notification. Otherwise as OnDynamicConfig.
func (d *ConfigListener) OnQuotaConfig(f func(user, client string, cfg map[string]string)) {
	if f == nil {
		return
	}
	d.register(func() { d.quotas = append(d.quotas, f) })
}

// deliverAllQuotas hands every client, user and user+client entity to the quota callbacks.
func (l *configChangeListener) deliverAllQuotas() error {
	d := l.d
	clients, err := d.conn.Children(zkdata.PathConfigClients)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	sort.Strings(clients)
	for _, c := range clients {
		if err := l.deliverQuota("clients/" + c); err != nil {
			return err
		}
	}
	users, err := d.conn.Children(zkdata.PathConfigUsers)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	sort.Strings(users)
	for _, u := range users {
		if err := l.deliverQuota("users/" + u); err != nil {
			return err
		}
		cs, err := d.conn.Children(zkdata.PathConfigUsers + "/" + u + "/clients")
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		sort.Strings(cs)
		for _, c := range cs {
			if err := l.deliverQuota("users/" + u + "/clients/" + c); err != nil {
				return err
			}
		}
	}
	return nil
}

// parseQuotaEntity splits an entity path users/<u>[/clients/<c>] or clients/<c> into the
// desanitized names.
func parseQuotaEntity(entity string) (user, client string, ok bool) {
	parts := strings.Split(entity, "/")
	var err error
	switch {
	case len(parts) == 2 && parts[0] == "clients" && parts[1] != "":
		client, err = zkdata.DesanitizeEntityName(parts[1])
	case len(parts) == 2 && parts[0] == "users" && parts[1] != "":
		user, err = zkdata.DesanitizeEntityName(parts[1])
	case len(parts) == 4 && parts[0] == "users" && parts[2] == "clients" && parts[1] != "" && parts[3] != "":
		if user, err = zkdata.DesanitizeEntityName(parts[1]); err == nil {
			client, err = zkdata.DesanitizeEntityName(parts[3])
		}
	default:
		return "", "", false
	}
	return user, client, err == nil
}

// deliverQuota re-reads one quota entity's znode and calls the quota callbacks.
func (l *configChangeListener) deliverQuota(entity string) error {
	d := l.d
	d.mu.Lock()
	cbs := append([]func(string, string, map[string]string){}, d.quotas...)
	d.mu.Unlock()
	if len(cbs) == 0 {
		return nil
	}
	user, client, ok := parseQuotaEntity(entity)
	if !ok {
		d.log.WithField("entity", entity).Warn("ignoring quota entity of a name Kafka's Sanitizer did not write")
		return nil
	}
	path := "/config/" + entity
	cfg := map[string]string{}
	data, _, err := d.conn.Get(path)
	switch {
	case errors.Is(err, zk.ErrNoNode), err == nil && len(data) == 0:
	case err != nil:
		return err
	default:
		if cfg, err = zkdata.DecodeConfig(data); err != nil {
			d.log.WithFields(logrus.Fields{"path": path}).WithError(err).Warn("ignoring undecodable config znode")
			return nil
		}
	}
	for _, f := range cbs {
		cp := make(map[string]string, len(cfg))
		for k, v := range cfg {
			cp[k] = v
		}
		f(user, client, cp)
	}
	return nil
}
