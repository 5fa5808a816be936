// Package s3server runs a real S3 server for tests and demos: versitygw
// (built by the Makefile into bin/controlplane) with its POSIX backend in a
// temporary directory, listening on one address the caller chooses
// (127.0.0.1, or the real node's bridge so pods reach it).
package s3server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Config says how to run the server.
type Config struct {
	// Binary is the versitygw program.
	Binary string
	// Host is the address to listen on; 127.0.0.1 when empty. The port is
	// chosen free.
	Host string
	// Port is the port to listen on; a free one when 0.
	Port int
	// Dir is the backend's directory (each subdirectory a bucket); a
	// temporary one, removed by Stop, when empty.
	Dir string
	// AccessKey and SecretKey are the root user's credentials; random
	// when empty.
	AccessKey, SecretKey string
	// TLS serves https with a certificate signed by a CA made for the
	// server (Server.CA).
	TLS bool
}

// Server is a running versitygw.
type Server struct {
	// Endpoint is its URL, http://HOST:PORT.
	Endpoint string
	// AccessKey and SecretKey are the root user's credentials, random for
	// each server.
	AccessKey, SecretKey string
	// Dir is the backend's directory.
	Dir string
	// CA is the PEM of the CA that signs the server's certificate, with
	// Config.TLS.
	CA []byte

	cmd     *exec.Cmd
	ownsDir bool
	// logDir holds the server's log; Stop removes it.
	logDir string
	// exited is closed when the process has exited, with exitErr set.
	exited  chan struct{}
	exitErr error
}

// Start runs the server and waits until it answers signed requests.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	host := cfg.Host
	if host == "" {
		host = "127.0.0.1"
	}
	port := cfg.Port
	if port == 0 {
		var err error
		if port, err = freePort(host); err != nil {
			return nil, err
		}
	}
	s := &Server{Endpoint: fmt.Sprintf("http://%s", net.JoinHostPort(host, fmt.Sprint(port))),
		AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey, Dir: cfg.Dir, exited: make(chan struct{})}
	if s.AccessKey == "" {
		s.AccessKey, s.SecretKey = "dbpilot"+randomHex(6), randomHex(20)
	}
	var err error
	if s.Dir == "" {
		if s.Dir, err = os.MkdirTemp("", "s3server-"); err != nil {
			return nil, err
		}
		s.ownsDir = true
	}
	args := []string{"--quiet", "--port", net.JoinHostPort(host, fmt.Sprint(port))}
	if cfg.TLS {
		certDir, err := os.MkdirTemp("", "s3server-tls-")
		if err != nil {
			s.cleanup()
			return nil, err
		}
		defer os.RemoveAll(certDir)
		ca, certFile, keyFile, err := writeTLS(certDir, host)
		if err != nil {
			s.cleanup()
			return nil, err
		}
		s.CA, s.Endpoint = ca, "https://"+net.JoinHostPort(host, fmt.Sprint(port))
		args = append(args, "--cert", certFile, "--key", keyFile)
	}
	s.cmd = exec.Command(cfg.Binary, append(args, "posix", s.Dir)...)
	s.cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+s.AccessKey, "ROOT_SECRET_KEY="+s.SecretKey)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if s.logDir, err = os.MkdirTemp("", "s3server-log-"); err != nil {
		s.cleanup()
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(s.logDir, "versitygw.log"))
	if err != nil {
		s.cleanup()
		return nil, err
	}
	defer logFile.Close()
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		s.cleanup()
		return nil, fmt.Errorf("starting versitygw: %w", err)
	}
	go func() {
		s.exitErr = s.cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(ctx); err != nil {
		log := logTail(logFile.Name())
		s.Stop()
		return nil, fmt.Errorf("versitygw did not start: %w; its log ends: %s", err, log)
	}
	return s, nil
}

// waitReady lists buckets until the server answers.
func (s *Server) waitReady(ctx context.Context) error {
	client, err := s.client()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := client.ListBuckets(callCtx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("exited: %v", s.exitErr)
		default:
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *Server) client() (*minio.Client, error) {
	host, secure := strings.CutPrefix(s.Endpoint, "https://")
	host = strings.TrimPrefix(host, "http://")
	opts := &minio.Options{
		Creds:        credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""),
		BucketLookup: minio.BucketLookupPath,
		Secure:       secure,
	}
	if secure {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(s.CA)
		opts.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	return minio.New(host, opts)
}

// CreateBucket creates a bucket through the S3 API.
func (s *Server) CreateBucket(ctx context.Context, name string) error {
	client, err := s.client()
	if err != nil {
		return err
	}
	return client.MakeBucket(ctx, name, minio.MakeBucketOptions{})
}

// Stop ends the server and removes a directory it created; stopping a
// stopped server does nothing.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		s.cleanup()
		return
	}
	select {
	case <-s.exited:
	default:
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
		// A frozen server takes the signal once it runs again.
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGCONT)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.exited
		}
	}
	s.cleanup()
}

// Freeze stops the server's processes (SIGSTOP) and closes nothing: a
// request to it waits, as it would on a store that hangs, until Thaw.
func (s *Server) Freeze() error {
	return s.signal(syscall.SIGSTOP)
}

// Thaw lets a frozen server run again (SIGCONT); thawing a running one
// does nothing.
func (s *Server) Thaw() error {
	return s.signal(syscall.SIGCONT)
}

// signal sends sig to the server's process group, unless it has exited.
func (s *Server) signal(sig syscall.Signal) error {
	if s.cmd == nil || s.cmd.Process == nil {
		return errors.New("s3server: not started")
	}
	select {
	case <-s.exited:
		return fmt.Errorf("s3server: exited: %v", s.exitErr)
	default:
	}
	return syscall.Kill(-s.cmd.Process.Pid, sig)
}

func (s *Server) cleanup() {
	if s.ownsDir {
		_ = os.RemoveAll(s.Dir)
	}
	if s.logDir != "" {
		_ = os.RemoveAll(s.logDir)
	}
}

// logTail is the end of the server's log, for an error that outlives it.
func logTail(path string) string {
	const tail = 2048
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > tail {
		b = b[len(b)-tail:]
	}
	return strings.TrimSpace(string(b))
}

func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("not a TCP address")
	}
	return addr.Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
