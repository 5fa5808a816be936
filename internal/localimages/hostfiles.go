package localimages

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// debianBase is a merged-/usr root filesystem with /tmp, the users an image
// runs as and a localhost entry, like the Debian images it stands in for.
func debianBase(users ...string) []Entry {
	passwd := "root:x:0:0:root:/root:/bin/sh\n"
	group := "root:x:0:\n"
	for _, u := range users {
		passwd += u + "\n"
		fields := strings.Split(u, ":")
		group += fmt.Sprintf("%s:x:%s:\n", fields[0], fields[3])
	}
	entries := []Entry{
		{Path: "tmp", Dir: true, Mode: 0o1777},
		{Path: "etc/passwd", Content: []byte(passwd)},
		{Path: "etc/group", Content: []byte(group)},
		{Path: "etc/hosts", Content: []byte("127.0.0.1 localhost\n::1 localhost\n")},
		{Path: "etc/nsswitch.conf", Content: []byte("passwd: files\ngroup: files\nhosts: files dns\n")},
		{Path: "proc", Dir: true}, {Path: "sys", Dir: true}, {Path: "dev", Dir: true},
	}
	for _, dir := range []string{"bin", "sbin", "lib", "lib64"} {
		entries = append(entries, Entry{Path: "usr/" + dir, Dir: true}, Entry{Path: dir, Link: "usr/" + dir})
	}
	return entries
}

// hostTrees copies directory trees of this machine, keeping symlinks.
func hostTrees(roots ...string) ([]Entry, error) {
	var entries []Entry
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel := strings.TrimPrefix(canonical(path), "/")
			switch {
			case d.Type()&fs.ModeSymlink != 0:
				target, err := os.Readlink(path)
				if err != nil {
					return err
				}
				entries = append(entries, Entry{Path: rel, Link: target})
			case d.IsDir():
				entries = append(entries, Entry{Path: rel, Dir: true})
			case d.Type().IsRegular():
				entries = append(entries, Entry{Path: rel, Source: path})
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("copying %s: %w", root, err)
		}
	}
	return entries, nil
}

// hostFiles copies single files (following symlinks) to their canonical
// path, so /bin/x and /usr/bin/x land in the same place.
func hostFiles(paths ...string) []Entry {
	entries := make([]Entry, 0, len(paths))
	for _, p := range paths {
		entries = append(entries, Entry{Path: strings.TrimPrefix(canonical(p), "/"), Source: p})
	}
	return entries
}

// canonical resolves symlinks in a path's directory (not in its last
// element), as merged /usr does for /lib and /bin.
func canonical(path string) string {
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return path
	}
	return filepath.Join(dir, filepath.Base(path))
}

// sharedLibraries are the libraries that binaries load, as ldd resolves
// them on this machine, each copied under its canonical directory.
func sharedLibraries(binaries ...string) ([]Entry, error) {
	seen := map[string]bool{}
	var entries []Entry
	for _, bin := range binaries {
		out, err := exec.Command("ldd", bin).Output()
		if err != nil {
			// Static binaries and scripts: nothing to load.
			continue
		}
		for _, line := range strings.Split(string(out), "\n") {
			fields := strings.Fields(line)
			var lib string
			switch {
			case len(fields) >= 3 && fields[1] == "=>" && strings.HasPrefix(fields[2], "/"):
				lib = fields[2]
			case len(fields) >= 1 && strings.HasPrefix(fields[0], "/"):
				lib = fields[0]
			default:
				continue
			}
			if seen[lib] {
				continue
			}
			seen[lib] = true
			entries = append(entries, hostFiles(lib)...)
		}
	}
	if len(entries) == 0 && len(binaries) > 0 {
		return nil, fmt.Errorf("ldd found no shared libraries for %v", binaries)
	}
	return entries, nil
}

// glob returns the files matching each pattern, failing on a pattern that
// matches nothing.
func glob(patterns ...string) ([]string, error) {
	var files []string
	for _, pattern := range patterns {
		matches, err := filepath.Glob(pattern)
		if err != nil {
			return nil, err
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("nothing matches %s (is the Debian package installed? make deps installs it)", pattern)
		}
		files = append(files, matches...)
	}
	return files, nil
}
