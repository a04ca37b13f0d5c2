//go:build !race

package logstore

// raceEnabled: built without the race detector (race_on.go).
const raceEnabled = false
