package groupcoord

import (
	"time"

	"github.com/isrbroker/isrbroker/broker/coordinator"
)

// Clock, Timer and RealClock are the coordinators' shared clock (broker/coordinator).
type (
	Clock = coordinator.Clock
	Timer = coordinator.Timer
)

// RealClock is the wall clock.
var RealClock = coordinator.RealClock

func millis(t time.Time) int64 { return t.UnixMilli() }

func msDuration(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }
