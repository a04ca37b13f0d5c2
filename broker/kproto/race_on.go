//go:build race

package kproto

// raceEnabled: built with the race detector. Its model takes the syscall package's reads and
// writes as synchronisation (a write happens before the read that sees its bytes), which
// direct system calls would hide from it, so they go through the syscall package instead
// (rawio_linux.go, directio_linux.go): the same calls, with the race annotations.
const raceEnabled = true
