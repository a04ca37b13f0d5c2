package logstore

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// faultFS is the tests' error-injecting FS (fs.go; the idea is Pebble's errorfs): it passes
// every call to the OS FS, records it, and fails the k-th call that matches its rule (an
// operation kind and a path suffix) with the rule's errno, as a disk that is full (ENOSPC) or
// failing (EIO) would. Counting only (k = 0) tells how many calls an operation makes of each
// kind, so a test can then fail each of them in turn (fsfault_test.go).

// fsOp is the kind of a file-system call.
type fsOp uint8

const (
	opCreate   fsOp = iota // OpenFile with O_CREATE
	opOpen                 // OpenFile without O_CREATE (files and directories)
	opRead                 // File.Read, File.ReadAt
	opWrite                // File.Write, File.WriteAt
	opSync                 // File.Sync (files and directories)
	opTruncate             // File.Truncate
	opClose                // File.Close
	opRename               // FS.Rename
	opRemove               // FS.Remove, FS.RemoveAll
	opMkdir                // FS.Mkdir, FS.MkdirAll
	opReadDir              // FS.ReadDir
	opStat                 // FS.Stat, File.Stat
	opChtimes              // FS.Chtimes
	numFSOps
)

var fsOpNames = [numFSOps]string{"create", "open", "read", "write", "sync", "truncate", "close", "rename", "remove", "mkdir", "readdir", "stat", "chtimes"}

func (o fsOp) String() string { return fsOpNames[o] }

// mutating reports whether a call of this kind changes what is on disk.
func (o fsOp) mutating() bool {
	switch o {
	case opCreate, opWrite, opSync, opTruncate, opRename, opRemove, opMkdir, opChtimes:
		return true
	}
	return false
}

// fsCall is one recorded call.
type fsCall struct {
	op     fsOp
	path   string
	failed bool // this call returned the injected error
}

// faultRule selects the calls that count and the one that fails.
type faultRule struct {
	op     fsOp
	suffix string // path suffix the call's path must have ("" for any)
	k      int    // fail the k-th matching call (1-based); 0 fails none
	errno  syscall.Errno
}

type faultFS struct {
	inner FS

	mu      sync.Mutex
	armed   bool // calls are matched against rule only while armed
	rule    faultRule
	matched int           // matching calls while armed
	counts  [numFSOps]int // calls of each kind while armed
	fired   int           // index in calls of the failed call, -1 until then
	calls   []fsCall      // every call, in order
}

func newFaultFS() *faultFS { return &faultFS{inner: osFS{}, fired: -1} }

// arm starts matching rule (resetting the count).
func (f *faultFS) arm(r faultRule) {
	f.mu.Lock()
	f.armed, f.rule, f.matched, f.counts = true, r, 0, [numFSOps]int{}
	f.mu.Unlock()
}

// disarm stops matching and returns how many calls of each kind were made while armed.
func (f *faultFS) disarm() [numFSOps]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed = false
	return f.counts
}

// mark is the number of calls recorded so far (for callsSince).
func (f *faultFS) mark() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// callsSince returns the calls recorded from mark on.
func (f *faultFS) callsSince(mark int) []fsCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fsCall(nil), f.calls[mark:]...)
}

// firedCall returns the failed call and its index, ok false if none failed.
func (f *faultFS) firedCall() (fsCall, int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fired < 0 {
		return fsCall{}, -1, false
	}
	return f.calls[f.fired], f.fired, true
}

// hit records a call and returns the injected error if it is the one to fail.
func (f *faultFS) hit(op fsOp, path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := fsCall{op: op, path: path}
	var err error
	if f.armed {
		f.counts[op]++
	}
	if f.armed && op == f.rule.op && strings.HasSuffix(path, f.rule.suffix) {
		f.matched++
		if f.matched == f.rule.k {
			c.failed = true
			f.fired = len(f.calls)
			err = &os.PathError{Op: "injected " + op.String(), Path: path, Err: f.rule.errno}
		}
	}
	f.calls = append(f.calls, c)
	return err
}

func (f *faultFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	op := opOpen
	if flag&os.O_CREATE != 0 {
		op = opCreate
	}
	if err := f.hit(op, name); err != nil {
		return nil, err
	}
	inner, err := f.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: inner, fs: f}, nil
}

func (f *faultFS) Remove(name string) error {
	if err := f.hit(opRemove, name); err != nil {
		return err
	}
	return f.inner.Remove(name)
}

func (f *faultFS) RemoveAll(name string) error {
	if err := f.hit(opRemove, name); err != nil {
		return err
	}
	return f.inner.RemoveAll(name)
}

func (f *faultFS) Rename(oldpath, newpath string) error {
	if err := f.hit(opRename, newpath); err != nil {
		return err
	}
	return f.inner.Rename(oldpath, newpath)
}

func (f *faultFS) Mkdir(name string, perm os.FileMode) error {
	if err := f.hit(opMkdir, name); err != nil {
		return err
	}
	return f.inner.Mkdir(name, perm)
}

func (f *faultFS) MkdirAll(name string, perm os.FileMode) error {
	if err := f.hit(opMkdir, name); err != nil {
		return err
	}
	return f.inner.MkdirAll(name, perm)
}

func (f *faultFS) ReadDir(name string) ([]os.DirEntry, error) {
	if err := f.hit(opReadDir, name); err != nil {
		return nil, err
	}
	return f.inner.ReadDir(name)
}

func (f *faultFS) Stat(name string) (os.FileInfo, error) {
	if err := f.hit(opStat, name); err != nil {
		return nil, err
	}
	return f.inner.Stat(name)
}

func (f *faultFS) Chtimes(name string, atime, mtime time.Time) error {
	if err := f.hit(opChtimes, name); err != nil {
		return err
	}
	return f.inner.Chtimes(name, atime, mtime)
}

// faultFile is a File of a faultFS. A failed write writes the first half of its bytes first,
// as a full disk may (a torn batch for recovery to cut).
type faultFile struct {
	File
	fs *faultFS
}

func (f *faultFile) Read(b []byte) (int, error) {
	if err := f.fs.hit(opRead, f.Name()); err != nil {
		return 0, err
	}
	return f.File.Read(b)
}

func (f *faultFile) ReadAt(b []byte, off int64) (int, error) {
	if err := f.fs.hit(opRead, f.Name()); err != nil {
		return 0, err
	}
	return f.File.ReadAt(b, off)
}

func (f *faultFile) Write(b []byte) (int, error) {
	if err := f.fs.hit(opWrite, f.Name()); err != nil {
		n, _ := f.File.Write(b[:len(b)/2])
		return n, err
	}
	return f.File.Write(b)
}

func (f *faultFile) WriteAt(b []byte, off int64) (int, error) {
	if err := f.fs.hit(opWrite, f.Name()); err != nil {
		n, _ := f.File.WriteAt(b[:len(b)/2], off)
		return n, err
	}
	return f.File.WriteAt(b, off)
}

func (f *faultFile) Sync() error {
	if err := f.fs.hit(opSync, f.Name()); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *faultFile) Truncate(size int64) error {
	if err := f.fs.hit(opTruncate, f.Name()); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

func (f *faultFile) Stat() (os.FileInfo, error) {
	if err := f.fs.hit(opStat, f.Name()); err != nil {
		return nil, err
	}
	return f.File.Stat()
}

func (f *faultFile) Close() error {
	err := f.fs.hit(opClose, f.Name())
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	return err
}

func (c fsCall) String() string {
	s := fmt.Sprintf("%s %s", c.op, filepath.Join(filepath.Base(filepath.Dir(c.path)), filepath.Base(c.path)))
	if c.failed {
		s += " (failed)"
	}
	return s
}
