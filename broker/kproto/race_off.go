//go:build !race

package kproto

// raceEnabled: built without the race detector (race_on.go).
const raceEnabled = false
