// Package replview serves the live replication page (docs/replication-page.md) on the broker's
// metrics listener:
//
//   - /replication/local.json: this broker's local view (replicamanager.Snapshot: hosted
//     partitions with role, leader epoch, HW, LEO, log start offset, the leader's ISR and each
//     follower's progress; the fetcher threads and their partitions; the recent events);
//   - /replication/cluster.json: the whole cluster, gathered by this broker from every
//     registered broker's local.json over HTTP (the page addresses are published in ZooKeeper
//     by zkcoord), with the controller and its epoch from ZooKeeper; a broker that does not
//     answer is marked unreachable and the rest is still shown;
//   - /replication: the page (HTML, CSS and JavaScript embedded in the binary, no network access
//     but to this broker), polling cluster.json about once a second.
//
// It is the page's whole server side: Page (page.go) is what main wires — the handler the
// metrics listener serves from the start (503 until Start), the controller's elected/resigned
// hook recording into the event journal (replicamanager/replevents, which the replica manager
// records into too), and the publishing of this broker's page address. It owns no replication
// state: it only reads the owners' snapshots (replicamanager, fetcher) and ZooKeeper through
// the zkcoord methods behind the Cluster and Publisher interfaces (only zkcoord knows the
// znodes).
package replview
