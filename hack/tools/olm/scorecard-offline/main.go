// Command scorecard-offline runs operator-sdk's six built-in scorecard tests
// on a bundle without a cluster. Those tests read only the bundle, which the
// scorecard-test program expects at the fixed path /bundle (where the
// scorecard pod mounts it); this command builds a directory holding the
// bundle and the static program, and runs the program chrooted into it.
// It needs root (CI runs as root); elsewhere, run `make scorecard` as root or
// against a cluster with SCORECARD_CLUSTER=1.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	scapiv1alpha3 "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
)

// tests are the built-in tests, as named by scorecard-test.
var tests = []string{
	"basic-check-spec",
	"olm-bundle-validation",
	"olm-crds-have-validation",
	"olm-crds-have-resources",
	"olm-spec-descriptors",
	"olm-status-descriptors",
}

func main() {
	program := flag.String("scorecard-test", "", "Path of the scorecard-test program (statically linked).")
	bundle := flag.String("bundle", "bundle", "Bundle directory.")
	workDir := flag.String("work-dir", "", "Directory to build the chroot in (recreated).")
	flag.Parse()
	if *program == "" || *workDir == "" {
		fmt.Fprintln(os.Stderr, "usage: scorecard-offline --scorecard-test PATH --bundle DIR --work-dir DIR")
		os.Exit(2)
	}
	if err := prepare(*program, *bundle, *workDir); err != nil {
		fmt.Fprintf(os.Stderr, "preparing %s: %v\n", *workDir, err)
		os.Exit(1)
	}
	passed, findings := 0, 0
	for _, test := range tests {
		status, err := run(*workDir, test)
		if err != nil {
			fmt.Printf("FAIL  %-26s %v\n", test, err)
			continue
		}
		for _, result := range status.Results {
			state := "PASS"
			if result.State != scapiv1alpha3.PassState {
				state = "FAIL"
			} else {
				passed++
			}
			fmt.Printf("%s  %-26s\n", state, result.Name)
			for _, e := range result.Errors {
				findings++
				fmt.Printf("      error: %s\n", e)
			}
			for _, s := range result.Suggestions {
				findings++
				fmt.Printf("      suggestion: %s\n", s)
			}
		}
	}
	fmt.Printf("scorecard: %d/%d tests passed, %d errors or suggestions\n", passed, len(tests), findings)
	if passed != len(tests) || findings > 0 {
		os.Exit(1)
	}
}

// prepare lays out workDir as the scorecard pod's filesystem: the program at
// /scorecard-test and the bundle at /bundle.
func prepare(program, bundle, workDir string) error {
	if err := os.RemoveAll(workDir); err != nil {
		return err
	}
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return err
	}
	if err := exec.Command("cp", "-r", bundle, filepath.Join(workDir, "bundle")).Run(); err != nil {
		return fmt.Errorf("copying bundle: %w", err)
	}
	if err := exec.Command("cp", program, filepath.Join(workDir, "scorecard-test")).Run(); err != nil {
		return fmt.Errorf("copying scorecard-test: %w", err)
	}
	return nil
}

// run runs one test chrooted into workDir and decodes its JSON result.
func run(workDir, test string) (*scapiv1alpha3.TestStatus, error) {
	cmd := exec.Command("/scorecard-test", test)
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: workDir}
	cmd.Dir = "/"
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("running scorecard-test %s: %w", test, err)
	}
	status := &scapiv1alpha3.TestStatus{}
	if err := json.Unmarshal(out, status); err != nil {
		return nil, fmt.Errorf("decoding result of %s: %w\n%s", test, err, out)
	}
	return status, nil
}
