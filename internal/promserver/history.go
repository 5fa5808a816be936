package promserver

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Series is one crafted time series: a gauge, or a counter growing at Rate
// per second.
type Series struct {
	Name    string
	Labels  map[string]string
	Counter bool
	// Value is the gauge's value, or the counter's rate per second.
	Value float64
}

// OpenMetrics renders series sampled every step from start to end (the last
// sample at end), in the format promtool loads.
func OpenMetrics(series []Series, start, end time.Time, step time.Duration) string {
	byName := map[string][]Series{}
	counters := map[string]bool{}
	for _, s := range series {
		byName[s.Name] = append(byName[s.Name], s)
		counters[s.Name] = s.Counter
	}
	names := make([]string, 0, len(byName))
	for name := range byName {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		kind := "gauge"
		if counters[name] {
			kind = "counter"
		}
		fmt.Fprintf(&b, "# TYPE %s %s\n", strings.TrimSuffix(name, "_total"), kind)
		for _, s := range byName[name] {
			labels := renderLabels(s.Labels)
			for at := start; !at.After(end); at = at.Add(step) {
				value := s.Value
				if s.Counter {
					value = s.Value * at.Sub(start).Seconds()
				}
				fmt.Fprintf(&b, "%s%s %g %d\n", name, labels, value, at.Unix())
			}
		}
	}
	b.WriteString("# EOF\n")
	return b.String()
}

func renderLabels(labels map[string]string) string {
	if len(labels) == 0 {
		return ""
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%q", k, labels[k]))
	}
	return "{" + strings.Join(parts, ",") + "}"
}
