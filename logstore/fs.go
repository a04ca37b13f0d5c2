package logstore

import (
	"io"
	"os"
	"path/filepath"
	"time"
)

// The file-system seam (docs/design.md, "File-system seam"): every file-system call of the
// log store goes through an FS and the File it opens, so that the unit tests can fail the k-th
// write, fsync, read, rename, create or remove of any operation with EIO or ENOSPC
// (errorfs_test.go) and check that the error reaches the offline-dir handling of
// logdir_failure.go (KIP-112). Production uses osFS, which calls package os and nothing else.
// fsseam_test.go fails if a non-test file of the package calls package os's file functions
// outside this file.

// FS is the file-system calls the log store makes. Paths are as package os takes them.
type FS interface {
	// OpenFile opens name as os.OpenFile does.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Remove(name string) error
	RemoveAll(name string) error
	Rename(oldpath, newpath string) error
	Mkdir(name string, perm os.FileMode) error
	MkdirAll(name string, perm os.FileMode) error
	ReadDir(name string) ([]os.DirEntry, error)
	Stat(name string) (os.FileInfo, error)
	Chtimes(name string, atime, mtime time.Time) error
}

// File is an open file of an FS: a segment, an index, a checkpoint or a directory (opened
// only to be fsynced).
type File interface {
	io.Reader
	io.Writer
	io.ReaderAt
	io.WriterAt
	io.Closer
	Sync() error
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
	Name() string
	// OSFile is the descriptor underneath, for the calls that take one: sendfile of fetch
	// regions (logstore/record), sync_file_range hints (writeback_linux.go); nil if none. A
	// File that wraps another (the tests' error-injecting one) returns the wrapped descriptor,
	// so those paths keep working under it; their errors are not injected.
	OSFile() *os.File
}

// osFS is the operating system's file system: package os.
type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}
func (osFS) Remove(name string) error                          { return os.Remove(name) }
func (osFS) RemoveAll(name string) error                       { return os.RemoveAll(name) }
func (osFS) Rename(oldpath, newpath string) error              { return os.Rename(oldpath, newpath) }
func (osFS) Mkdir(name string, perm os.FileMode) error         { return os.Mkdir(name, perm) }
func (osFS) MkdirAll(name string, perm os.FileMode) error      { return os.MkdirAll(name, perm) }
func (osFS) ReadDir(name string) ([]os.DirEntry, error)        { return os.ReadDir(name) }
func (osFS) Stat(name string) (os.FileInfo, error)             { return os.Stat(name) }
func (osFS) Chtimes(name string, atime, mtime time.Time) error { return os.Chtimes(name, atime, mtime) }

// osFile is an open *os.File.
type osFile struct{ *os.File }

func (f osFile) OSFile() *os.File { return f.File }

// directOSFile returns the *os.File of f when f is the OS FS's own, nil otherwise. Direct
// appends and reads (directio.go) and copy_file_range (copyPrefix) bypass File's methods, so
// they are taken only when nothing stands between the log and the OS; under the tests' error
// FS every byte goes through File.
func directOSFile(f File) *os.File {
	if of, ok := f.(osFile); ok {
		return of.File
	}
	return nil
}

// fsOr returns fsys, or the OS FS when it is nil (a Log or segment built without one).
func fsOr(fsys FS) FS {
	if fsys == nil {
		return osFS{}
	}
	return fsys
}

// openFS opens name read-only.
func openFS(fsys FS, name string) (File, error) { return fsys.OpenFile(name, os.O_RDONLY, 0) }

// readFileFS reads the whole file as os.ReadFile does, through File's Read.
func readFileFS(fsys FS, name string) ([]byte, error) {
	f, err := openFS(fsys, name)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return data, err
}

// writeFileFS writes data to name (created or truncated) as os.WriteFile does, without fsync.
func writeFileFS(fsys FS, name string, data []byte, perm os.FileMode) error {
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// fileExistsFS reports whether name exists (any error counts as not existing).
func fileExistsFS(fsys FS, name string) bool {
	_, err := fsys.Stat(name)
	return err == nil
}

// syncDirFS fsyncs a directory so a rename or create in it is durable.
func syncDirFS(fsys FS, dir string) error {
	d, err := openFS(fsys, filepath.Clean(dir))
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
