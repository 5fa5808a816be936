// Command sim replays load traces through dbpilot's auto-pilot and through
// the Kubernetes HPA algorithm, and prints, per trace and summed over all,
// overloaded pod-seconds, cost and flaps. `go run ./autopilot/cmd/sim
// [--world FILE] [--seeds N] [TRACE.csv ...]`; without traces it runs the
// shipped suite, without a world file the default world; with N seeds, the
// suite once per noise seed and the summary over all of them.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/dbpilot/dbpilot/autopilot/sim"
)

func main() {
	suite := flag.String("suite", filepath.Join("autopilot", "sim", "testdata"), "Directory of the default trace suite.")
	chartDir := flag.String("charts", "", "Directory to write one SVG chart per trace into (none when empty).")
	worldFile := flag.String("world", "", "World file (JSON, see autopilot/sim/README.md); the default world when empty.")
	seeds := flag.Int("seeds", 1, "Run the suite with this many noise seeds, from the world's seed on, and print each seed's summary and the summary of all (no table, no charts).")
	flag.Parse()

	world := sim.DefaultWorld()
	if *worldFile != "" {
		var err error
		if world, _, err = sim.ReadWorldFile(*worldFile); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}

	var traces []sim.Trace
	var err error
	if flag.NArg() == 0 {
		traces, err = sim.ReadSuite(*suite)
	} else {
		for _, path := range flag.Args() {
			var trace sim.Trace
			if trace, err = sim.ReadTraceFile(path); err != nil {
				break
			}
			traces = append(traces, trace)
		}
	}
	if err == nil && len(traces) == 0 {
		err = fmt.Errorf("no traces in %s", *suite)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}

	if *seeds < 1 {
		fmt.Fprintln(os.Stderr, "--seeds must be at least 1")
		os.Exit(1)
	}
	if *seeds > 1 {
		var all sim.Comparison
		for i := range *seeds {
			seeded := world
			seeded.Seed = world.Seed + uint64(i)
			total := sim.CompareSuite(traces, sim.ConfigFor(seeded))
			fmt.Printf("seed %d: %s\n", seeded.Seed, strings.SplitN(total.Summary(), "\n", 2)[0])
			all = all.Add(total)
		}
		fmt.Println(all.OracleLine())
		fmt.Println(all.Summary())
		return
	}

	cfg := sim.ConfigFor(world)
	table := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(table, "trace\toverload autopilot\toverload hpa\toverload hpa+vpa\tcost autopilot\tcost hpa\tcost hpa+vpa\tcost oracle\tcost oracle at target\tflaps autopilot\tflaps hpa\tchanges autopilot\tchanges hpa\twrite-unavailable s autopilot\twrite-unavailable s hpa+vpa\trestarts autopilot\tswitchovers autopilot\t")
	var total sim.Comparison
	for _, trace := range traces {
		cmp := sim.Compare(trace, cfg)
		total = total.Add(cmp)
		fmt.Fprintf(table, "%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%d\t%d\t%d\t%d\t%.0f\t%.0f\t%d\t%d\t\n", trace.Name,
			cmp.Autopilot.OverloadPodSeconds, cmp.HPA.OverloadPodSeconds, cmp.HPAVPA.OverloadPodSeconds,
			cmp.Autopilot.Cost, cmp.HPA.Cost, cmp.HPAVPA.Cost, cmp.OracleCost, cmp.OracleAtTargetCost,
			cmp.Autopilot.Flaps, cmp.HPA.Flaps, cmp.Autopilot.Changes, cmp.HPA.Changes,
			cmp.Autopilot.WriteUnavailableSeconds, cmp.HPAVPA.WriteUnavailableSeconds, cmp.Autopilot.Restarts, cmp.Autopilot.Switchovers)
		if *chartDir != "" {
			if err := sim.WriteChart(filepath.Join(*chartDir, trace.Name+".svg"), trace.Name, cmp); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
	}
	table.Flush()
	fmt.Println(total.OracleLine())
	fmt.Println(total.Summary())
}
