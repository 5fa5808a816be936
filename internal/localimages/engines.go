package localimages

import (
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Engine images are assembled from the machine's Debian packages and named
// like the upstream images they stand in for, so a pod spec needs no change:
// the same paths, the same users (uid and gid 999), the engine binaries on
// PATH. The operator's instance program is the entrypoint (copied in by an
// init container), so the images need no entrypoint of their own.
const (
	// PostgresImage stands in for the upstream PostgreSQL 15 image.
	PostgresImage = "docker.io/library/postgres:15"
	// MariaDBImage stands in for the upstream MariaDB 10.11 image.
	MariaDBImage = "docker.io/library/mariadb:10.11"
)

// cUTF8Locale is the C.UTF-8 locale the images' LANG names (Debian's
// libc-bin ships it as files).
const cUTF8Locale = "/usr/lib/locale/C.utf8"

// Postgres15 is PostgreSQL 15 from the postgresql-15 package, without the
// LLVM JIT provider (which alone would add 130 MB).
func Postgres15(cacheDir string) (v1.Image, error) {
	const home = "/usr/lib/postgresql/15"
	entries := debianBase("postgres:x:999:999:PostgreSQL:/var/lib/postgresql:/bin/sh")
	trees, err := hostTrees(home+"/bin", "/usr/share/postgresql/15", "/usr/share/zoneinfo", cUTF8Locale)
	if err != nil {
		return nil, err
	}
	modules, err := glob(home + "/lib/*.so")
	if err != nil {
		return nil, err
	}
	var kept []string
	for _, m := range modules {
		if !strings.Contains(m, "llvmjit") {
			kept = append(kept, m)
		}
	}
	binaries, err := glob(home+"/bin/*", "/usr/bin/dash")
	if err != nil {
		return nil, err
	}
	libs, err := sharedLibraries(append(binaries, kept...)...)
	if err != nil {
		return nil, err
	}
	entries = append(entries, trees...)
	entries = append(entries, hostFiles(kept...)...)
	entries = append(entries, hostFiles("/usr/bin/dash")...)
	entries = append(entries, libs...)
	entries = append(entries,
		// initdb runs postgres through popen, which needs /bin/sh.
		Entry{Path: "usr/bin/sh", Link: "dash"},
		Entry{Path: "var/lib/postgresql/data", Dir: true, Mode: 0o777},
		Entry{Path: "var/run/postgresql", Dir: true, Mode: 0o3777},
	)
	return Build(Spec{
		Entries: entries,
		Env: []string{
			"PATH=" + home + "/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"PGDATA=/var/lib/postgresql/data",
			"LANG=C.UTF-8",
		},
		User: "999",
	}, cacheDir)
}

// MariaDB1011 is MariaDB 10.11 from the mariadb-server package, with the
// shell tools mariadb-install-db runs.
func MariaDB1011(cacheDir string) (v1.Image, error) {
	entries := debianBase("mysql:x:999:999:MariaDB:/var/lib/mysql:/bin/sh")
	tools := []string{
		"/usr/sbin/mariadbd", "/usr/bin/mariadb-install-db", "/usr/bin/my_print_defaults", "/usr/bin/resolveip",
		"/usr/bin/mariadb", "/usr/bin/mariadb-admin", "/usr/bin/mariadb-backup", "/usr/bin/mbstream", "/usr/bin/mariadb-binlog",
		"/usr/bin/dash", "/usr/bin/cat", "/usr/bin/chmod", "/usr/bin/chown", "/usr/bin/dirname", "/usr/bin/hostname",
		"/usr/bin/mkdir", "/usr/bin/sed", "/usr/bin/mawk", "/usr/bin/rm", "/usr/bin/uname", "/usr/bin/printf",
	}
	files, err := glob(tools...)
	if err != nil {
		return nil, err
	}
	trees, err := hostTrees("/usr/share/mysql", "/usr/lib/mysql", cUTF8Locale)
	if err != nil {
		return nil, err
	}
	plugins, err := glob("/usr/lib/mysql/plugin/*.so")
	if err != nil {
		return nil, err
	}
	libs, err := sharedLibraries(append(files, plugins...)...)
	if err != nil {
		return nil, err
	}
	entries = append(entries, hostFiles(files...)...)
	entries = append(entries, trees...)
	entries = append(entries, libs...)
	entries = append(entries,
		Entry{Path: "usr/bin/sh", Link: "dash"},
		Entry{Path: "usr/bin/awk", Link: "mawk"},
		Entry{Path: "etc/mysql/my.cnf", Content: []byte("# As in the upstream image: the configuration lives in conf.d.\n!includedir /etc/mysql/conf.d/\n")},
		Entry{Path: "etc/mysql/conf.d", Dir: true},
		Entry{Path: "var/lib/mysql", Dir: true, Mode: 0o777},
		Entry{Path: "run/mysqld", Dir: true, Mode: 0o777},
	)
	return Build(Spec{
		Entries: entries,
		Env:     []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"},
		User:    "999",
	}, cacheDir)
}
