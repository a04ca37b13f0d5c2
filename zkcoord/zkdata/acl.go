package zkdata

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ACL znodes, exactly as Kafka 2.4 stores them (ZkData.scala: ZkAclStore, LiteralAclChangeStore,
// ExtendedAclChangeStore; docs/acls.md), so ACLs written by Kafka's kafka-acls.sh are read here
// and the other way round:
//
//	/kafka-acl/<ResourceType>/<name>                     LITERAL patterns (name may be "*")
//	/kafka-acl-extended/prefixed/<ResourceType>/<name>   PREFIXED patterns
//	/kafka-acl-changes/acl_changes_<seq>                 "Topic:foo" (a LITERAL pattern changed)
//	/kafka-acl-extended-changes/acl_changes_<seq>        {"version":1,"resourceType":"Topic","name":"foo","patternType":"PREFIXED"}
//
// Node data: {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}.
// Types and names are strings here (zkdata knows the formats, not the ACL model).
const (
	PathACL                = "/kafka-acl"
	PathACLExtended        = "/kafka-acl-extended"
	PathACLChanges         = "/kafka-acl-changes"
	PathACLExtendedChanges = "/kafka-acl-extended-changes"
	// ACLChangePrefix names the sequential children of both change paths.
	ACLChangePrefix = "acl_changes_"
	// PatternLiteral and PatternPrefixed are the two stored pattern types, as Kafka names them.
	PatternLiteral  = "LITERAL"
	PatternPrefixed = "PREFIXED"
)

// ACLResourceTypes are the resource type names under each ACL store, in Kafka's spelling.
var ACLResourceTypes = []string{"Topic", "Group", "Cluster", "TransactionalId", "DelegationToken"}

// ACLStorePath is the store of a pattern type: /kafka-acl or /kafka-acl-extended/prefixed.
func ACLStorePath(patternType string) (string, error) {
	switch patternType {
	case PatternLiteral:
		return PathACL, nil
	case PatternPrefixed:
		// Kafka's path part is patternType.name.toLowerCase.
		return PathACLExtended + "/" + strings.ToLower(PatternPrefixed), nil
	}
	return "", fmt.Errorf("zkdata: no ACL store for pattern type %q", patternType)
}

// ACLPath is the znode of one resource pattern's ACLs.
func ACLPath(patternType, resourceType, name string) (string, error) {
	store, err := ACLStorePath(patternType)
	if err != nil {
		return "", err
	}
	return store + "/" + resourceType + "/" + name, nil
}

// ACLChangeSequential is the path to create (sequential) for a change of a pattern type's ACLs.
func ACLChangeSequential(patternType string) string {
	if patternType == PatternLiteral {
		return PathACLChanges + "/" + ACLChangePrefix
	}
	return PathACLExtendedChanges + "/" + ACLChangePrefix
}

// ACLChangePath is the change notification seq under changesPath (PathACLChanges or
// PathACLExtendedChanges).
func ACLChangePath(changesPath string, seq int64) string {
	return fmt.Sprintf("%s/%s%010d", changesPath, ACLChangePrefix, seq)
}

// ACLChangeSeqs returns the sequence numbers of the acl_changes_<seq> children, sorted.
func ACLChangeSeqs(children []string) []int64 { return sequenceNumbers(children, ACLChangePrefix) }

// ACLEntry is one entry of an ACL znode, in Kafka's field names and spelling.
type ACLEntry struct {
	Principal      string `json:"principal"`
	PermissionType string `json:"permissionType"`
	Operation      string `json:"operation"`
	Host           string `json:"host"`
}

type aclNode struct {
	Version int        `json:"version"`
	ACLs    []ACLEntry `json:"acls"`
}

// EncodeACLs is the data of an ACL znode (version 1).
func EncodeACLs(entries []ACLEntry) []byte {
	if entries == nil {
		entries = []ACLEntry{}
	}
	b, _ := json.Marshal(aclNode{Version: 1, ACLs: entries})
	return b
}

// DecodeACLs parses an ACL znode; a version other than 1 or an entry missing a field is an error.
func DecodeACLs(data []byte) ([]ACLEntry, error) {
	var n aclNode
	if err := json.Unmarshal(data, &n); err != nil {
		return nil, fmt.Errorf("zkdata: ACL znode: %w", err)
	}
	if n.Version != 1 {
		return nil, fmt.Errorf("zkdata: ACL znode version %d, want 1", n.Version)
	}
	for i, e := range n.ACLs {
		if e.Principal == "" || e.PermissionType == "" || e.Operation == "" || e.Host == "" {
			return nil, fmt.Errorf("zkdata: ACL znode entry %d lacks a field: %+v", i, e)
		}
	}
	return n.ACLs, nil
}

// ACLChange names the resource pattern a change notification is about.
type ACLChange struct {
	ResourceType string
	Name         string
	PatternType  string
}

type extendedChange struct {
	Version      int    `json:"version"`
	ResourceType string `json:"resourceType"`
	Name         string `json:"name"`
	PatternType  string `json:"patternType"`
}

// EncodeACLChange is a notification's data: "Topic:foo" for LITERAL (Kafka's
// LiteralAclChangeStore), the JSON of ExtendedAclChangeStore otherwise.
func EncodeACLChange(c ACLChange) []byte {
	if c.PatternType == PatternLiteral {
		return []byte(c.ResourceType + ":" + c.Name)
	}
	b, _ := json.Marshal(extendedChange{Version: 1, ResourceType: c.ResourceType, Name: c.Name, PatternType: c.PatternType})
	return b
}

// DecodeACLChange parses a notification found under changesPath.
func DecodeACLChange(changesPath string, data []byte) (ACLChange, error) {
	if changesPath == PathACLChanges {
		typ, name, ok := strings.Cut(string(data), ":")
		if !ok || typ == "" || name == "" {
			return ACLChange{}, fmt.Errorf("zkdata: ACL change %q is not <ResourceType>:<name>", data)
		}
		return ACLChange{ResourceType: typ, Name: name, PatternType: PatternLiteral}, nil
	}
	var e extendedChange
	if err := json.Unmarshal(data, &e); err != nil {
		return ACLChange{}, fmt.Errorf("zkdata: extended ACL change: %w", err)
	}
	if e.Version != 1 || e.ResourceType == "" || e.Name == "" || e.PatternType == "" {
		return ACLChange{}, fmt.Errorf("zkdata: extended ACL change %s is incomplete", data)
	}
	return ACLChange{ResourceType: e.ResourceType, Name: e.Name, PatternType: e.PatternType}, nil
}
