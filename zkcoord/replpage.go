package zkcoord

import (
	"errors"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
)

// This file is what the replication page (broker/replview, docs/replication-page.md) needs
// from ZooKeeper, so that only zkcoord knows the znodes: each broker publishes the HTTP
// address of its page (zkdata.PathReplicationPages), and any broker reads the registered
// brokers' addresses and the controller. This broker winning or losing the controller
// election reaches the page from the controller itself (Config.OnControllerChange), not
// from a watch of its own.

// PublishReplicationPage writes this broker's page address ("host:port") to
// /isrbroker/replication_page/<id>, creating the znode or overwriting an earlier process's.
func (c *Coordinator) PublishReplicationPage(address string) error {
	path := zkdata.ReplicationPagePath(c.cfg.BrokerID)
	data := zkdata.EncodeReplicationPage(address)
	if err := zkclient.CreateRecursive(c.zk, zkdata.PathReplicationPages); err != nil {
		return err
	}
	for {
		_, err := c.zk.Set(path, data, -1)
		if !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		_, err = c.zk.Create(path, data, 0)
		if !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
}

// ReplicationPeer is a registered broker and the address of its replication page ("" when it
// published none).
type ReplicationPeer struct {
	ID          int32
	PageAddress string
}

// ReplicationPeers returns the registered brokers (/brokers/ids) sorted by id, each with its
// published page address.
func (c *Coordinator) ReplicationPeers() ([]ReplicationPeer, error) {
	live, err := c.Reader.LiveBrokers()
	if err != nil {
		return nil, err
	}
	out := make([]ReplicationPeer, 0, len(live))
	for _, b := range live {
		p := ReplicationPeer{ID: b.ID}
		data, _, err := c.zk.Get(zkdata.ReplicationPagePath(b.ID))
		switch {
		case err == nil:
			if addr, derr := zkdata.DecodeReplicationPage(data); derr == nil {
				p.PageAddress = addr
			}
		case !errors.Is(err, zk.ErrNoNode):
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Controller returns the active controller's id (-1: none) and /controller_epoch.
func (c *Coordinator) Controller() (id, epoch int32, err error) {
	id, err = c.Reader.ControllerID()
	if err != nil {
		return -1, 0, err
	}
	epoch, _, err = c.Reader.ControllerEpoch()
	return id, epoch, err
}
