package instance_test

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
)

// engineSetup is an instance's files as its pod has them, set up for a
// test: the credentials Secret's directory (the application user shop,
// with app-pass-1, and super-pass-1), the socket's directory and the
// engine's configuration, listening on port at 127.0.0.1.
type engineSetup struct {
	dir, creds, run string
	port            int
	// path is the PATH the program finds the engine's binaries on.
	path string
	// args are the program's arguments for them.
	args []string
}

// postgresSetup sets up a PostgreSQL 15 instance's files.
func postgresSetup(t testing.TB, pg osUser) engineSetup {
	t.Helper()
	s := engineSetup{dir: pg.workDir(t), port: freePort(t), path: "/usr/lib/postgresql/15/bin:/usr/bin:/bin"}
	s.creds = pg.mkdir(t, filepath.Join(s.dir, "credentials"))
	s.run = pg.mkdir(t, filepath.Join(s.dir, "run"))
	credentials(t, pg, s.creds, "shop", "app-pass-1", "super-pass-1")
	pg.writeFile(t, filepath.Join(s.dir, "postgresql.conf"), fmt.Sprintf(
		"listen_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\nshared_buffers = 32MB\n", s.port, s.run))
	s.args = []string{"--engine=postgres", "--data-dir=" + filepath.Join(s.dir, "pgdata"),
		"--config-file=" + filepath.Join(s.dir, "postgresql.conf"), "--socket=" + s.run,
		"--port=" + strconv.Itoa(s.port), "--credentials-dir=" + s.creds}
	return s
}

// mariadbSetup sets up a MariaDB instance's files.
func mariadbSetup(t testing.TB, my osUser) engineSetup {
	t.Helper()
	s := engineSetup{dir: my.workDir(t), port: freePort(t), path: "/usr/sbin:/usr/bin:/bin"}
	s.creds = my.mkdir(t, filepath.Join(s.dir, "credentials"))
	s.run = my.mkdir(t, filepath.Join(s.dir, "run"))
	credentials(t, my, s.creds, "shop", "app-pass-1", "super-pass-1")
	my.writeFile(t, filepath.Join(s.dir, "my.cnf"), fmt.Sprintf(
		"[mysqld]\nbind-address = 127.0.0.1\nport = %d\nskip-name-resolve\ninnodb_buffer_pool_size = 64M\n", s.port))
	s.args = []string{"--engine=mariadb", "--data-dir=" + filepath.Join(s.dir, "data"),
		"--socket=" + filepath.Join(s.run, "mysqld.sock"), "--defaults-file=" + filepath.Join(s.dir, "my.cnf"),
		"--credentials-dir=" + s.creds}
	return s
}
