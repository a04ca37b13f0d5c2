// Package acl is Kafka 2.4's access-control model and decision (docs/acls.md):
// the resource types, pattern types, operations and permissions with Kafka's codes and names,
// ACL bindings, the filters of DescribeAcls and DeleteAcls, and the Authorizer's decision
// (kafka.security.authorizer.AclAuthorizer.authorizeAction): super users, LITERAL, `*` and
// PREFIXED patterns, DENY before ALLOW, the implied operations, allow.everyone.if.no.acl.found,
// and KIP-430's authorized-operations bitfields.
//
// It owns the in-memory ACL cache of one broker; where the ACLs are stored (ZooKeeper's
// /kafka-acl znodes) and how changes reach it are zkcoord's. It is a leaf: it imports nothing
// of the repository.
package acl
