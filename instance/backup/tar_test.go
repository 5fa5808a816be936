package backup

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/dbpilot/dbpilot/internal/objectstore"
)

// TestTarRoundTrip writes a directory as a tar through a store and back:
// files, nested directories and a link come back the same; a corrupted
// artifact is reported as a checksum mismatch, not as a broken tar.
func TestTarRoundTrip(t *testing.T) {
	src := t.TempDir()
	files := map[string]string{"PG_VERSION": "15\n", "base/1/1259": string(bytes.Repeat([]byte("x"), 70000)), "global/pg_control": "ctl"}
	for name, content := range files {
		path := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("base/1", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store := objectstore.Dir{Root: t.TempDir()}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(WriteTar(pw, src)) }()
	artifact, err := Upload(ctx, store, "base/b/base.tar.gz", pr)
	if err != nil {
		t.Fatal(err)
	}
	dest := t.TempDir()
	if err := ExtractTar(func(w io.Writer) error { return Download(ctx, store, artifact, w) }, dest); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		got, err := os.ReadFile(filepath.Join(dest, name))
		if err != nil || string(got) != content {
			t.Fatalf("%s came back as %d bytes (%v), want %d", name, len(got), err, len(content))
		}
	}
	if link, err := os.Readlink(filepath.Join(dest, "link")); err != nil || link != "base/1" {
		t.Fatalf("link came back as %q (%v)", link, err)
	}

	path := filepath.Join(store.Root, "base/b/base.tar.gz")
	data, _ := os.ReadFile(path)
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	err = ExtractTar(func(w io.Writer) error { return Download(ctx, store, artifact, w) }, t.TempDir())
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("extracting a corrupted artifact: %v, want a checksum mismatch", err)
	}
}
