// Package agent holds the broker-side ZooKeeper agents of one broker, apart from the admin API
// and the controller: the registration of /brokers/ids/<id> with its re-registration after a
// session expiry (Registrar), the partition leader's own ISR write and the batched
// /isr_change_notification propagation (IsrWriter, K3/K5), the dynamic config listener on
// /config/changes (ConfigListener), the producer-id block allocation (ProducerIDs), and the
// client side of controlled shutdown (ControlledShutdown, K7), and the log dir event
// notifications of offline log dirs (LogDirEvents, KIP-112). Each
// owns only its own state and reaches ZooKeeper through zkcoord/zkclient.Conn with the paths
// and JSON of zkcoord/zkdata.
package agent

func isClosed(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}
