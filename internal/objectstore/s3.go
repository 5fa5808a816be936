package objectstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config locates a bucket in an S3-compatible object store.
type S3Config struct {
	// Endpoint is the store's URL (https://s3.example.com); empty: AWS S3.
	Endpoint string
	// Region is the bucket's region; empty lets the client discover it.
	Region string
	// Bucket is the bucket's name.
	Bucket string
	// Prefix is prepended to every key ("team/orders/").
	Prefix string
	// AccessKeyID and SecretAccessKey sign the requests.
	AccessKeyID     string
	SecretAccessKey string
	// CA is a PEM bundle that signs the endpoint's certificate; empty: the
	// system's roots.
	CA []byte
	// IdleTimeout fails a connection that has moved no byte for that
	// long; zero: DefaultIdleTimeout.
	IdleTimeout time.Duration
}

// S3 is a Store in a bucket, through the MinIO client (which speaks to any
// S3-compatible store). Large objects are uploaded in parts.
type S3 struct {
	client *minio.Client
	bucket string
	prefix string
}

var _ Store = (*S3)(nil)

// partSize is the size of the parts of a streamed upload: 16 MiB keeps
// memory bounded and allows objects up to 160 GB (10,000 parts).
const partSize = 16 << 20

// NewS3 makes a client for the bucket. It does not contact the store.
func NewS3(cfg S3Config) (*S3, error) {
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = "https://s3.amazonaws.com"
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("endpoint %q is not an http(s) URL", cfg.Endpoint)
	}
	transport, err := minio.DefaultTransport(u.Scheme == "https")
	if err != nil {
		return nil, err
	}
	idle := cfg.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	transport.DialContext = idleDialer(transport.DialContext, idle)
	if len(cfg.CA) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.CA) {
			return nil, errors.New("the CA bundle holds no PEM certificate")
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	client, err := minio.New(u.Host, &minio.Options{
		Creds:     credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, ""),
		Secure:    u.Scheme == "https",
		Region:    cfg.Region,
		Transport: transport,
		// Path-style requests work with every S3-compatible store.
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		return nil, err
	}
	prefix := strings.Trim(cfg.Prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &S3{client: client, bucket: cfg.Bucket, prefix: prefix}, nil
}

// Put uploads the object in parts of partSize.
func (s *S3) Put(ctx context.Context, key string, r io.Reader) error {
	_, err := s.client.PutObject(ctx, s.bucket, s.prefix+key, r, -1, minio.PutObjectOptions{
		PartSize:    partSize,
		ContentType: "application/octet-stream",
	})
	return describe(key, err)
}

// Get opens the object; a missing object is reported at once, not on the
// first read.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	obj, err := s.client.GetObject(ctx, s.bucket, s.prefix+key, minio.GetObjectOptions{})
	if err != nil {
		return nil, describe(key, err)
	}
	if _, err := obj.Stat(); err != nil {
		obj.Close()
		return nil, describe(key, err)
	}
	return obj, nil
}

// Stat describes the object.
func (s *S3) Stat(ctx context.Context, key string) (Object, error) {
	info, err := s.client.StatObject(ctx, s.bucket, s.prefix+key, minio.StatObjectOptions{})
	if err != nil {
		return Object{}, describe(key, err)
	}
	return Object{Key: key, Size: info.Size, Modified: info.LastModified}, nil
}

// List lists the objects under prefix, recursively.
func (s *S3) List(ctx context.Context, prefix string) ([]Object, error) {
	var objects []Object
	for info := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + prefix, Recursive: true}) {
		if info.Err != nil {
			return nil, describe(prefix, info.Err)
		}
		objects = append(objects, Object{Key: strings.TrimPrefix(info.Key, s.prefix), Size: info.Size, Modified: info.LastModified})
	}
	sort.Slice(objects, func(i, j int) bool { return objects[i].Key < objects[j].Key })
	return objects, nil
}

// Delete removes the object.
func (s *S3) Delete(ctx context.Context, key string) error {
	err := s.client.RemoveObject(ctx, s.bucket, s.prefix+key, minio.RemoveObjectOptions{})
	if minio.ToErrorResponse(err).StatusCode == http.StatusNotFound {
		return nil
	}
	return describe(key, err)
}

// describe turns the store's answer into an error that names the key, the
// HTTP status and the store's code, and wraps ErrNotFound for a missing key.
func describe(key string, err error) error {
	if err == nil {
		return nil
	}
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.StatusCode == http.StatusNotFound && resp.Code != "NoSuchBucket":
		return fmt.Errorf("%s: %w", key, ErrNotFound)
	case resp.StatusCode != 0:
		return fmt.Errorf("%s: the object store answered %d %s: %s", key, resp.StatusCode, resp.Code, resp.Message)
	}
	return fmt.Errorf("%s: %w", key, err)
}
