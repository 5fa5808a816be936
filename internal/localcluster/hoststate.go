package localcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// The real node changes state that belongs to the whole machine: sysctls,
// iptables, cgroups, mounts and a few fixed paths under /run and /var. One
// real node runs per machine at a time; what it changes is recorded before it
// starts, in a record that outlives a crash, and put back on Stop or by the
// next Start.
const (
	// hostStateDir holds the lock and the record. /run is cleared on boot,
	// which also clears everything the record would restore.
	hostStateDir    = "/run/dbpilot-realnode"
	hostStateLock   = hostStateDir + "/lock"
	hostStateRecord = hostStateDir + "/record.json"
)

// touchedSysctls are the sysctls the kubelet, kube-proxy and the CNI bridge
// plugin set (kubelet: kernel defaults it insists on; bridge: forwarding).
var touchedSysctls = []string{
	"kernel.panic",
	"kernel.panic_on_oops",
	"kernel.keys.root_maxkeys",
	"kernel.keys.root_maxbytes",
	"vm.overcommit_memory",
	"vm.panic_on_oom",
	"net.ipv4.ip_forward",
	"net.ipv4.conf.all.forwarding",
	"net.ipv4.conf.all.route_localnet",
	"net.ipv6.conf.all.forwarding",
	"net.bridge.bridge-nf-call-iptables",
	"net.bridge.bridge-nf-call-ip6tables",
	"net.netfilter.nf_conntrack_max",
}

// touchedPaths are machine paths that containerd, the CNI plugins and the
// kubelet use whatever their configuration says.
var touchedPaths = []string{
	"/run/containerd",
	"/var/lib/cni",
	"/var/lib/kubelet",
	"/var/log/pods",
	"/var/log/containers",
}

// touchedCgroups are the cgroups the kubelet (cgroupfs driver) and
// containerd create under every hierarchy.
var touchedCgroups = []string{"kubepods", "k8s.io"}

// hostRecord is what the machine looked like before the real node started,
// and what the node started, so a later run can undo a crashed one.
type hostRecord struct {
	// NodeDir is the node's own state directory (containerd root and state,
	// kubelet root, volumes); every mount under it is the node's.
	NodeDir string `json:"nodeDir"`
	// Bridge is the network bridge the node created.
	Bridge string `json:"bridge"`
	// ContainerdAddress is containerd's socket: shims carry it on their
	// command line, which is how leftovers of a crash are found.
	ContainerdAddress string `json:"containerdAddress"`
	// ProcessGroups are the process groups the node started, each with its
	// leader's start time.
	ProcessGroups []recordedGroup `json:"processGroupLeaders"`
	// Sysctls maps each touched sysctl that exists to its value before.
	Sysctls map[string]string `json:"sysctls"`
	// IPTables maps iptables-save and ip6tables-save to their output before.
	IPTables map[string]string `json:"iptables"`
	// CreatedPaths are touchedPaths that did not exist before.
	CreatedPaths []string `json:"createdPaths"`
	// CreatedCgroups are the cgroup directories that did not exist before.
	CreatedCgroups []string `json:"createdCgroups"`
}

// hostLock is the machine-wide lock of the real node.
type hostLock struct{ file *os.File }

// lockHost takes the machine-wide lock, failing at once when another real
// node holds it.
func lockHost() (*hostLock, error) {
	if err := os.MkdirAll(hostStateDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", hostStateDir, err)
	}
	f, err := os.OpenFile(hostStateLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", hostStateLock, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another real node runs on this machine (%s is locked): %w", hostStateLock, err)
	}
	return &hostLock{file: f}, nil
}

func (l *hostLock) release() {
	_ = syscall.Flock(int(l.file.Fd()), syscall.LOCK_UN)
	l.file.Close()
}

// recordHost reads the state the node is about to change.
func recordHost(nodeDir, bridge, containerdAddress string) (*hostRecord, error) {
	rec := &hostRecord{
		NodeDir:           nodeDir,
		Bridge:            bridge,
		ContainerdAddress: containerdAddress,
		Sysctls:           map[string]string{},
		IPTables:          map[string]string{},
	}
	for _, key := range touchedSysctls {
		if value, err := readSysctl(key); err == nil {
			rec.Sysctls[key] = value
		}
	}
	for _, save := range []string{"iptables-save", "ip6tables-save"} {
		out, err := exec.Command(save).Output()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", save, err)
		}
		rec.IPTables[save] = string(out)
	}
	for _, path := range touchedPaths {
		if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
			rec.CreatedPaths = append(rec.CreatedPaths, path)
		}
	}
	for _, dir := range cgroupCandidates() {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			rec.CreatedCgroups = append(rec.CreatedCgroups, dir)
		}
	}
	return rec, nil
}

// cgroupCandidates are the touched cgroups in every mounted hierarchy.
func cgroupCandidates() []string {
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*")
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		// cgroup v2: one unified hierarchy.
		hierarchies = []string{"/sys/fs/cgroup"}
	}
	var dirs []string
	for _, h := range hierarchies {
		if info, err := os.Stat(h); err != nil || !info.IsDir() {
			continue
		}
		for _, name := range touchedCgroups {
			dirs = append(dirs, filepath.Join(h, name))
		}
	}
	return dirs
}

func (r *hostRecord) save() error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(hostStateRecord, data, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", hostStateRecord, err)
	}
	return nil
}

// loadHostRecord returns the record a crashed run left, or nil.
func loadHostRecord() (*hostRecord, error) {
	data, err := os.ReadFile(hostStateRecord)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rec := &hostRecord{}
	if err := json.Unmarshal(data, rec); err != nil {
		return nil, fmt.Errorf("reading %s: %w", hostStateRecord, err)
	}
	return rec, nil
}

// restore undoes what the node changed, once its processes are stopped:
// leftover processes, mounts, the bridge, iptables, sysctls, cgroups and
// paths, in that order. It goes on past errors and returns them all.
func (r *hostRecord) restore() error {
	var errs []error
	errs = append(errs, killLeftovers(r)...)
	errs = append(errs, unmountUnder(r.mountRoots())...)
	if r.Bridge != "" {
		if err := exec.Command("ip", "link", "show", r.Bridge).Run(); err == nil {
			if out, err := exec.Command("ip", "link", "del", r.Bridge).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("deleting bridge %s: %v: %s", r.Bridge, err, out))
			}
		}
	}
	errs = append(errs, r.restoreIPTables()...)
	for key, value := range r.Sysctls {
		if current, err := readSysctl(key); err == nil && current != value {
			if err := writeSysctl(key, value); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, dir := range r.CreatedCgroups {
		errs = append(errs, removeCgroupTree(dir)...)
	}
	for _, path := range r.CreatedPaths {
		if err := os.RemoveAll(path); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", path, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := os.Remove(hostStateRecord); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// mountRoots are the directories under which every mount is the node's.
func (r *hostRecord) mountRoots() []string {
	roots := []string{r.NodeDir}
	for _, path := range r.CreatedPaths {
		roots = append(roots, path)
	}
	return roots
}

// restoreIPTables puts back every table as it was and empties the tables
// that did not exist before (kube-proxy and the kubelet create nat and
// mangle chains).
func (r *hostRecord) restoreIPTables() []error {
	var errs []error
	for save, before := range r.IPTables {
		family := strings.TrimSuffix(save, "-save")
		now, err := exec.Command(save).Output()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", save, err))
			continue
		}
		if normalizeIPTables(string(now)) == normalizeIPTables(before) {
			continue
		}
		restore := exec.Command(family + "-restore")
		restore.Stdin = strings.NewReader(before)
		if out, err := restore.CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("%s-restore: %v: %s", family, err, out))
		}
		had := iptablesTables(before)
		for table := range iptablesTables(string(now)) {
			if !had[table] {
				errs = append(errs, dropTable(family, table)...)
			}
		}
	}
	return errs
}

// dropTable removes a table that did not exist before. With the nf_tables
// backend (Debian's default) the table itself is deleted; the legacy
// backend's tables are built in, so they are only emptied.
func dropTable(family, table string) []error {
	nftFamily := map[string]string{"iptables": "ip", "ip6tables": "ip6"}[family]
	if version, _ := exec.Command(family, "-V").Output(); strings.Contains(string(version), "nf_tables") {
		if _, err := exec.LookPath("nft"); err == nil {
			if out, err := exec.Command("nft", "delete", "table", nftFamily, table).CombinedOutput(); err != nil {
				return []error{fmt.Errorf("nft delete table %s %s: %v: %s", nftFamily, table, err, out)}
			}
			return nil
		}
	}
	var errs []error
	for _, flag := range []string{"-F", "-X"} {
		if out, err := exec.Command(family, "-t", table, flag).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("%s -t %s %s: %v: %s", family, table, flag, err, out))
		}
	}
	return errs
}

// normalizeIPTables drops comments and packet counters from iptables-save
// output, so two saves of the same rules compare equal.
func normalizeIPTables(save string) string {
	var lines []string
	for _, line := range strings.Split(save, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, ":") {
			// ":CHAIN POLICY [packets:bytes]"
			if i := strings.LastIndex(line, " ["); i > 0 {
				line = line[:i]
			}
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// iptablesTables are the tables ("*nat") an iptables-save output holds.
func iptablesTables(save string) map[string]bool {
	tables := map[string]bool{}
	for _, line := range strings.Split(save, "\n") {
		if strings.HasPrefix(line, "*") {
			tables[strings.TrimPrefix(strings.TrimSpace(line), "*")] = true
		}
	}
	return tables
}

// killLeftovers kills what a crashed run left: the recorded process groups,
// containerd's shims (found by the socket on their command line) and every
// process in the node's cgroups.
func killLeftovers(r *hostRecord) []error {
	for _, group := range r.ProcessGroups {
		group.killIfStillOurs()
	}
	victims := map[int]bool{}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, proc := range procs {
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(proc), "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(proc, "cmdline"))
		if r.ContainerdAddress != "" && strings.Contains(string(cmdline), r.ContainerdAddress) {
			victims[pid] = true
			continue
		}
		cgroups, _ := os.ReadFile(filepath.Join(proc, "cgroup"))
		for _, line := range strings.Split(string(cgroups), "\n") {
			parts := strings.SplitN(line, ":", 3)
			if len(parts) == 3 && (strings.HasPrefix(parts[2], "/kubepods") || strings.HasPrefix(parts[2], "/k8s.io")) {
				victims[pid] = true
			}
		}
	}
	var errs []error
	for pid := range victims {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("killing leftover process %d: %w", pid, err))
		}
	}
	for pid := range victims {
		if err := waitProcessGone(pid); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func waitProcessGone(pid int) error {
	for range 100 {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		// A zombie is gone for our purposes: its parent reaps it.
		if fields, _ := statFields(pid); len(fields) > 0 && fields[0] == "Z" {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("process %d still exists after SIGKILL", pid)
}

// mountsUnder lists the mount points under any of roots, deepest first.
func mountsUnder(roots []string) []string {
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return nil
	}
	var found []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		point := unescapeMount(fields[1])
		for _, root := range roots {
			if root != "" && (point == root || strings.HasPrefix(point, root+"/")) {
				found = append(found, point)
				break
			}
		}
	}
	sort.Slice(found, func(i, j int) bool { return len(found[i]) > len(found[j]) })
	return found
}

// unescapeMount decodes the octal escapes /proc/mounts uses for spaces.
func unescapeMount(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

func unmountUnder(roots []string) []error {
	var errs []error
	// Mounts can stack; go round until none is left or nothing moves.
	for range 5 {
		points := mountsUnder(roots)
		if len(points) == 0 {
			return nil
		}
		errs = nil
		for _, point := range points {
			if err := syscall.Unmount(point, 0); err != nil {
				if err := syscall.Unmount(point, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
					errs = append(errs, fmt.Errorf("unmounting %s: %w", point, err))
				}
			}
		}
	}
	if points := mountsUnder(roots); len(points) > 0 {
		errs = append(errs, fmt.Errorf("still mounted: %v", points))
	}
	return errs
}

// removeCgroupTree removes a cgroup directory and its children, deepest
// first (cgroup directories are removed with rmdir, never with their files).
func removeCgroupTree(dir string) []error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var dirs []string
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	var errs []error
	for _, d := range dirs {
		if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
		}
	}
	return errs
}

func sysctlPath(key string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))
}

func readSysctl(key string) (string, error) {
	data, err := os.ReadFile(sysctlPath(key))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(data)), nil
}

func writeSysctl(key, value string) error {
	if err := os.WriteFile(sysctlPath(key), []byte(value), 0o644); err != nil {
		return fmt.Errorf("restoring sysctl %s=%s: %w", key, value, err)
	}
	return nil
}
