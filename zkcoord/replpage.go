package zkcoord

import (
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/isrbroker/isrbroker/zkcoord/zkclient"
	"github.com/isrbroker/isrbroker/zkcoord/zkdata"
	"github.com/sirupsen/logrus"
)

// This file is what the replication page (docs/replication-page.md) needs from ZooKeeper: each
// broker publishes the HTTP address of its page (zkdata.PathReplicationPages), any broker reads
// the registered brokers' addresses and the controller, and a watch on /controller reports this
// broker winning or losing the controller election (S9).

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

// OnControllerChange watches /controller until Close and calls f(elected, epoch) when this
// broker becomes the controller (elected true, with the /controller_epoch it won) or stops being
// it (elected false). The election writes /controller and /controller_epoch in one multi, so the
// epoch read after the change is the winner's. f runs on the watch goroutine.
func (c *Coordinator) OnControllerChange(f func(elected bool, epoch int32)) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.watchController(f)
	}()
}

func (c *Coordinator) watchController(f func(elected bool, epoch int32)) {
	me := c.cfg.BrokerID
	wasMe := false
	lastEpoch := int32(-1)
	for {
		id := int32(-1)
		data, _, ev, err := c.zk.GetW(zkdata.PathController)
		if errors.Is(err, zk.ErrNoNode) {
			var ok bool
			ok, _, ev, err = c.zk.ExistsW(zkdata.PathController)
			if err == nil && ok {
				continue // created meanwhile: read it
			}
		} else if err == nil {
			if d, derr := zkdata.DecodeController(data); derr == nil {
				id = d
			}
		}
		if err != nil {
			c.log.WithFields(logrus.Fields{"component": "replication-page"}).WithError(err).Debug("watching /controller")
			select {
			case <-c.done:
				return
			case <-time.After(time.Second):
				continue
			}
		}
		isMe := id == me
		if isMe {
			epoch, _, eerr := c.Reader.ControllerEpoch()
			if eerr == nil && (!wasMe || epoch != lastEpoch) {
				f(true, epoch)
				lastEpoch = epoch
			}
		} else if wasMe {
			f(false, lastEpoch)
		}
		wasMe = isMe
		select {
		case <-c.done:
			return
		case <-ev:
		}
	}
}
