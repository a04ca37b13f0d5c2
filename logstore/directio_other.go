//go:build !linux

package logstore

import "os"

// directIO: elsewhere appends and reads go through os.File (directio.go).
const directIO = false

func pwriteDirect(f *os.File, b []byte, off int64) (int, error) { return f.WriteAt(b, off) }
func threadSleeps() int64                                       { return 0 }
func preadDirect(f *os.File, b []byte, off int64) (int, error)  { return f.ReadAt(b, off) }
