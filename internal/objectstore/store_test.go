package objectstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbpilot/dbpilot/internal/localcluster"
	"github.com/dbpilot/dbpilot/internal/objectstore"
	"github.com/dbpilot/dbpilot/internal/s3server"
)

// TestStores runs the same round trip against a directory and a real S3
// server (versitygw): put, stat, list, get, replace, delete, and the errors
// for missing objects and a missing bucket.
func TestStores(t *testing.T) {
	ctx := context.Background()
	binDir, err := localcluster.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	server, err := s3server.Start(ctx, s3server.Config{Binary: filepath.Join(binDir, "versitygw")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Stop)
	if err := server.CreateBucket(ctx, "backups"); err != nil {
		t.Fatal(err)
	}
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
	binDir, err := localcluster.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	server, err := s3server.Start(ctx, s3server.Config{Binary: filepath.Join(binDir, "versitygw"), TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Stop)
	if err := server.CreateBucket(ctx, "backups"); err != nil {
		t.Fatal(err)
	}
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
