// Command scorecard is `make scorecard` on a machine that can run a real
// node: it starts the local control plane with a real node, pushes the
// scorecard's images (the scorecard-test program built at operator-sdk's
// pinned version, and a tools image for its untar step) to the node's
// registry, runs the real `operator-sdk scorecard bundle` against it, prints
// the results and fails unless every test passed.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/dbpilot/dbpilot/internal/localcluster"
	"github.com/dbpilot/dbpilot/internal/localimages"
)

func main() {
	operatorSDK := flag.String("operator-sdk", "", "Path of the operator-sdk binary.")
	scorecardTest := flag.String("scorecard-test", "", "Path of the scorecard-test binary (operator-sdk's images/scorecard-test).")
	bundle := flag.String("bundle", "bundle", "The bundle directory.")
	want := flag.Int("tests", 6, "How many tests the bundle's scorecard configuration runs.")
	flag.Parse()
	if err := run(*operatorSDK, *scorecardTest, *bundle, *want); err != nil {
		fmt.Fprintf(os.Stderr, "scorecard: %v\n", err)
		os.Exit(1)
	}
}

func run(operatorSDK, scorecardTest, bundle string, want int) (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := localcluster.Start(ctx, localcluster.Config{RealNode: true})
	if err != nil {
		return err
	}
	defer func() {
		stop := c.Stop
		if err != nil {
			stop = c.StopKeepingLogs
			fmt.Fprintf(os.Stderr, "cluster logs kept in %s\n", c.LogDir())
		}
		err = errors.Join(err, stop())
	}()
	fmt.Printf(">> control plane with a real node up in %.1fs\n", time.Since(start).Seconds())

	root, err := localcluster.RepoRoot()
	if err != nil {
		return err
	}
	cache := filepath.Join(root, "bin", "images")
	images := map[string]func() (v1.Image, error){
		localimages.ScorecardTestImage:  func() (v1.Image, error) { return localimages.ScorecardTest(scorecardTest, cache) },
		localimages.ScorecardToolsImage: func() (v1.Image, error) { return localimages.ScorecardTools(cache) },
	}
	for name, build := range images {
		img, err := build()
		if err != nil {
			return fmt.Errorf("building %s: %w", name, err)
		}
		if err := c.PushImage(ctx, name, img); err != nil {
			return err
		}
	}
	clientset, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return err
	}
	for {
		if _, err := clientset.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		}
		if ctx.Err() != nil {
			return errors.New("the default ServiceAccount never appeared")
		}
		time.Sleep(100 * time.Millisecond)
	}

	start = time.Now()
	cmd := exec.CommandContext(ctx, operatorSDK, "scorecard", bundle,
		"--kubeconfig", c.KubeconfigPath,
		"--namespace", "default",
		"--untar-image", localimages.ScorecardToolsImage,
		"--storage-image", localimages.ScorecardToolsImage,
		"--wait-time", "180s",
		"--output", "json")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	runErr := cmd.Run()
	fmt.Printf(">> operator-sdk scorecard ran in %.1fs against the real node\n", time.Since(start).Seconds())
	passed, total, err := summarize(stdout.Bytes())
	if err != nil {
		return errors.Join(err, runErr)
	}
	fmt.Printf("scorecard %d/%d passed (operator-sdk scorecard on the real node)\n", passed, total)
	if passed != total || total != want {
		return fmt.Errorf("%d of %d tests passed, %d expected", passed, total, want)
	}
	return runErr
}

// testList is the part of scorecard's JSON output read here.
type testList struct {
	Items []struct {
		Status struct {
			Results []struct {
				Name   string   `json:"name"`
				State  string   `json:"state"`
				Errors []string `json:"errors"`
			} `json:"results"`
		} `json:"status"`
	} `json:"items"`
}

// summarize prints each result and counts those that passed.
func summarize(output []byte) (passed, total int, err error) {
	var list testList
	if err := json.Unmarshal(output, &list); err != nil {
		return 0, 0, fmt.Errorf("reading scorecard's output: %w: %s", err, output)
	}
	for _, item := range list.Items {
		for _, result := range item.Status.Results {
			total++
			if result.State == "pass" {
				passed++
			}
			fmt.Printf("  %-28s %s %v\n", result.Name, result.State, result.Errors)
		}
	}
	return passed, total, nil
}
