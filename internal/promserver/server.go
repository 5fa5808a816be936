// Package promserver runs a real Prometheus server (the Debian package) for
// tests and demos: loaded with crafted history through
// `promtool tsdb create-blocks-from openmetrics`, or scraping targets, on
// 127.0.0.1 with its data in a temporary directory.
package promserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dbpilot/dbpilot/internal/localcluster"
)

// Binaries are the paths of prometheus and promtool.
var (
	PrometheusBinary = "/usr/bin/prometheus"
	PromtoolBinary   = "/usr/bin/promtool"
)

// Server is a running Prometheus.
type Server struct {
	// URL is the server's base URL.
	URL string
	// Dir holds the TSDB, the configuration and the log.
	Dir    string
	cmd    *exec.Cmd
	args   []string
	exited chan struct{}
}

// Config says what to start.
type Config struct {
	// OpenMetrics, when set, is loaded as history before the server starts.
	// Counters need a # TYPE line; samples are `name{labels} value seconds`;
	// the text ends with # EOF.
	OpenMetrics string
	// ScrapeTargets are host:port targets scraped every ScrapeInterval.
	ScrapeTargets  []string
	ScrapeInterval time.Duration
	// ScrapeConfigs are more entries of scrape_configs, as YAML (a list,
	// indented as at the top level).
	ScrapeConfigs string
}

// Start loads the history (if any) and starts Prometheus, waiting until it is
// ready.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	for _, bin := range []string{PrometheusBinary, PromtoolBinary} {
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("%s not found (run `make deps` for the Debian prometheus package): %w", bin, err)
		}
	}
	dir, err := os.MkdirTemp("", "dbpilot-prometheus-")
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir}
	fail := func(err error) (*Server, error) {
		return nil, errors.Join(err, s.Stop())
	}
	data := filepath.Join(dir, "data")
	if cfg.OpenMetrics != "" {
		input := filepath.Join(dir, "history.om")
		if err := os.WriteFile(input, []byte(cfg.OpenMetrics), 0o644); err != nil {
			return fail(err)
		}
		out, err := exec.CommandContext(ctx, PromtoolBinary, "tsdb", "create-blocks-from", "openmetrics", input, data).CombinedOutput()
		if err != nil {
			return fail(fmt.Errorf("promtool create-blocks-from openmetrics: %w\n%s", err, out))
		}
	}
	interval := cfg.ScrapeInterval
	if interval == 0 {
		interval = 5 * time.Second
	}
	config := fmt.Sprintf("global:\n  scrape_interval: %s\n  evaluation_interval: %s\nscrape_configs:\n", interval, interval)
	if len(cfg.ScrapeTargets) > 0 {
		config += fmt.Sprintf("- job_name: targets\n  static_configs:\n  - targets: ['%s']\n", strings.Join(cfg.ScrapeTargets, "', '"))
	}
	config += cfg.ScrapeConfigs
	configPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		return fail(err)
	}
	port, err := localcluster.FreePort()
	if err != nil {
		return fail(err)
	}
	s.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
	s.args = []string{
		"--config.file=" + configPath,
		"--storage.tsdb.path=" + data,
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
		"--storage.tsdb.retention.time=30d",
	}
	if err := s.run(); err != nil {
		return fail(err)
	}
	return s, nil
}

// run starts the process and waits until it is ready.
func (s *Server) run() error {
	log, err := os.OpenFile(filepath.Join(s.Dir, "prometheus.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	s.cmd = exec.Command(PrometheusBinary, s.args...)
	s.cmd.Stdout, s.cmd.Stderr = log, log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("starting prometheus: %w", err)
	}
	exited := make(chan struct{})
	s.exited = exited
	cmd := s.cmd
	go func() { _ = cmd.Wait(); log.Close(); close(exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(s.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			out, _ := os.ReadFile(filepath.Join(s.Dir, "prometheus.log"))
			return fmt.Errorf("prometheus exited:\n%s", out)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("prometheus not ready after 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Resume starts a halted Prometheus again, on the same address with the
// same data, and waits until it is ready.
func (s *Server) Resume() error {
	if s.cmd != nil {
		return errors.New("prometheus is running")
	}
	return s.run()
}

// Stop halts Prometheus and removes its directory once it has exited.
func (s *Server) Stop() error {
	if err := s.Halt(); err != nil {
		return err
	}
	return os.RemoveAll(s.Dir)
}

// Halt stops Prometheus (SIGTERM, then SIGKILL after 10 s) as an outage
// would, keeping its data and address for Resume.
func (s *Server) Halt() error {
	if s.cmd != nil && s.cmd.Process != nil {
		pgid := s.cmd.Process.Pid
		select {
		case <-s.exited:
			// It died on its own and was reaped: its group's number may be
			// another's by now.
			s.cmd = nil
			return nil
		default:
		}
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-s.exited
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("prometheus process group %d still running", pgid)
		}
		s.cmd = nil
	}
	return nil
}
