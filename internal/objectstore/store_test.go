package objectstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbpilot/dbpilot/internal/localcluster"
	"github.com/dbpilot/dbpilot/internal/objectstore"
	"github.com/dbpilot/dbpilot/internal/s3server"
)

// startS3 runs versitygw (over TLS, with its own CA, when tls is set) with
// a bucket named backups, stopped when the test ends.
func startS3(t *testing.T, tls bool) *s3server.Server {
	t.Helper()
	binDir, err := localcluster.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	server, err := s3server.Start(context.Background(), s3server.Config{Binary: filepath.Join(binDir, "versitygw"), TLS: tls})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Stop)
	if err := server.CreateBucket(context.Background(), "backups"); err != nil {
		t.Fatal(err)
	}
	return server
}

// TestStores runs the same round trip against a directory and a real S3
// server (versitygw): put, stat, list, get, replace, delete, and the errors
// for missing objects and a missing bucket.
func TestStores(t *testing.T) {
	ctx := context.Background()
	server := startS3(t, false)
	s3, err := objectstore.NewS3(objectstore.S3Config{Endpoint: server.Endpoint, Bucket: "backups", Prefix: "/team/orders/",
		AccessKeyID: server.AccessKey, SecretAccessKey: server.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	stores := map[string]objectstore.Store{"dir": objectstore.Dir{Root: t.TempDir()}, "s3": s3}
	for name, store := range stores {
		t.Run(name, func(t *testing.T) { roundTrip(ctx, t, store) })
	}

	t.Run("s3 missing bucket", func(t *testing.T) {
		missing, err := objectstore.NewS3(objectstore.S3Config{Endpoint: server.Endpoint, Bucket: "nobucket",
			AccessKeyID: server.AccessKey, SecretAccessKey: server.SecretKey})
		if err != nil {
			t.Fatal(err)
		}
		err = missing.Put(ctx, "a", strings.NewReader("x"))
		if err == nil || !strings.Contains(err.Error(), "NoSuchBucket") || errors.Is(err, objectstore.ErrNotFound) {
			t.Fatalf("put into a missing bucket: %v, want NoSuchBucket", err)
		}
	})
	t.Run("s3 wrong secret", func(t *testing.T) {
		wrong, err := objectstore.NewS3(objectstore.S3Config{Endpoint: server.Endpoint, Bucket: "backups",
			AccessKeyID: server.AccessKey, SecretAccessKey: "not-the-secret"})
		if err != nil {
			t.Fatal(err)
		}
		if err := wrong.Put(ctx, "a", strings.NewReader("x")); err == nil || !strings.Contains(err.Error(), "403") {
			t.Fatalf("put with a wrong secret: %v, want 403", err)
		}
	})
}

func roundTrip(ctx context.Context, t *testing.T, store objectstore.Store) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 2<<20) // 32 MiB: a multi-part upload
	if err := store.Put(ctx, "base/one/data.tar.gz", bytes.NewReader(big)); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, "wal/000000010000000000000001.gz", strings.NewReader("first")); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, "wal/000000010000000000000001.gz", strings.NewReader("second")); err != nil {
		t.Fatal(err)
	}
	info, err := store.Stat(ctx, "base/one/data.tar.gz")
	if err != nil || info.Size != int64(len(big)) {
		t.Fatalf("stat: %+v, %v; want size %d", info, err, len(big))
	}
	r, err := store.Get(ctx, "base/one/data.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("get returned %d bytes (%v), want the %d put", len(got), err, len(big))
	}
	r, err = store.Get(ctx, "wal/000000010000000000000001.gz")
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(r)
	r.Close()
	if string(got) != "second" {
		t.Fatalf("a replaced object reads %q, want %q", got, "second")
	}
	all, err := store.List(ctx, "")
	if err != nil || len(all) != 2 || all[0].Key != "base/one/data.tar.gz" || all[1].Key != "wal/000000010000000000000001.gz" {
		t.Fatalf("list: %+v, %v", all, err)
	}
	wal, err := store.List(ctx, "wal/")
	if err != nil || len(wal) != 1 || wal[0].Size != int64(len("second")) {
		t.Fatalf("list wal/: %+v, %v", wal, err)
	}
	if _, err := store.Get(ctx, "base/two/data.tar.gz"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("get of a missing object: %v, want ErrNotFound", err)
	}
	if _, err := store.Stat(ctx, "base/two/data.tar.gz"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("stat of a missing object: %v, want ErrNotFound", err)
	}
	if err := store.Delete(ctx, "base/one/data.tar.gz"); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(ctx, "base/one/data.tar.gz"); err != nil {
		t.Fatalf("deleting a missing object: %v", err)
	}
	if rest, err := store.List(ctx, "base/"); err != nil || len(rest) != 0 {
		t.Fatalf("after delete, base/ lists %+v, %v", rest, err)
	}
}

// TestS3OverTLSWithCA reaches an https endpoint whose certificate a private
// CA signs: with the CA given it works; without it, the client refuses the
// certificate.
func TestS3OverTLSWithCA(t *testing.T) {
	ctx := context.Background()
	server := startS3(t, true)
	config := objectstore.S3Config{Endpoint: server.Endpoint, Bucket: "backups", AccessKeyID: server.AccessKey, SecretAccessKey: server.SecretKey}
	withCA := config
	withCA.CA = server.CA
	store, err := objectstore.NewS3(withCA)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, "a", strings.NewReader("over tls")); err != nil {
		t.Fatalf("put over https with the CA: %v", err)
	}
	untrusting, err := objectstore.NewS3(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := untrusting.Put(ctx, "b", strings.NewReader("x")); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("put over https without the CA: %v, want a certificate error", err)
	}
	if _, err := objectstore.NewS3(objectstore.S3Config{Endpoint: server.Endpoint, Bucket: "backups", CA: []byte("not pem")}); err == nil {
		t.Fatal("a CA bundle without a certificate was accepted")
	}
}

// freezingReader serves n zero bytes and freezes the server once after
// the first at bytes have been read.
type freezingReader struct {
	n, at, read int64
	freeze      func()
	frozen      bool
}

func (r *freezingReader) Read(b []byte) (int, error) {
	if r.read >= r.n {
		return 0, io.EOF
	}
	if !r.frozen && r.read >= r.at {
		r.frozen = true
		r.freeze()
	}
	n := int64(len(b))
	if left := r.n - r.read; n > left {
		n = left
	}
	clear(b[:n])
	r.read += n
	return int(n), nil
}

// TestS3FailsAStoreThatHangs freezes the S3 server (SIGSTOP: its
// connections stay open, and a write to it blocks once the buffers are
// full) while an upload streams to it: the upload fails once each attempt
// has moved no byte for the idle timeout (a second here), instead of
// waiting for ever. Thawed, the store takes the next upload.
func TestS3FailsAStoreThatHangs(t *testing.T) {
	ctx := context.Background()
	server := startS3(t, false)
	s3, err := objectstore.NewS3(objectstore.S3Config{Endpoint: server.Endpoint, Bucket: "backups",
		AccessKeyID: server.AccessKey, SecretAccessKey: server.SecretKey, IdleTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	body := &freezingReader{n: 64 << 20, at: 20 << 20, freeze: func() {
		if err := server.Freeze(); err != nil {
			t.Error(err)
		}
	}}
	t.Cleanup(func() { _ = server.Thaw() })
	// The bound only ends the test if the upload waits for ever.
	bounded, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	started := time.Now()
	err = s3.Put(bounded, "base.tar.gz", body)
	took := time.Since(started)
	if err == nil || bounded.Err() != nil {
		t.Fatalf("upload to a store that hangs: %v after %s (bound: %v), want it failed on its own", err, took.Round(time.Millisecond), bounded.Err())
	}
	t.Logf("upload to a frozen store failed after %s: %v", took.Round(time.Millisecond), err)

	if err := server.Thaw(); err != nil {
		t.Fatal(err)
	}
	if err := s3.Put(ctx, "after", strings.NewReader("thawed")); err != nil {
		t.Fatalf("upload once thawed: %v", err)
	}
}
