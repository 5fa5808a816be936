package sim

import (
	"fmt"
	"math"
	"strings"
)

// chartSVG draws a trace's comparison in three panels sharing the time axis:
// demand against each controller's serving capacity, replicas, and the
// auto-pilot's tier (the HPA keeps the start tier).
func chartSVG(title string, c Comparison) string {
	const width, panel, margin = 900.0, 150.0, 50.0
	height := 3*panel + 4*margin
	ap, hpa := c.Autopilot.Timeline, c.HPA.Timeline
	if len(ap) == 0 {
		return ""
	}
	end := ap[len(ap)-1].Seconds
	x := func(s float64) float64 { return margin + (width-2*margin)*s/math.Max(1, end) }

	var demandMax float64
	for i := range ap {
		demandMax = math.Max(demandMax, math.Max(ap[i].Reads+ap[i].Writes, math.Max(ap[i].Capacity, hpa[i].Capacity)))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="20" font-size="15">%s: auto-pilot (blue) and HPA (orange)</text>`+"\n", margin, title)

	line := func(top, maxY float64, value func(i int) float64, color string, dash string) {
		var pts []string
		for i := range ap {
			y := top + panel - panel*value(i)/math.Max(maxY, 1e-9)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(ap[i].Seconds), y))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" stroke-dasharray="%s" points="%s"/>`+"\n", color, dash, strings.Join(pts, " "))
	}
	axes := func(top float64, label string, maxY float64) {
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`+"\n", margin, top, width-2*margin, panel)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s</text><text x="5" y="%.0f">%.0f</text><text x="5" y="%.0f">0</text>`+"\n", margin, top-5, label, top+10, maxY, top+panel)
	}

	top := margin + 10
	axes(top, "demand (black) and capacity in units; overload where demand tops capacity", demandMax)
	line(top, demandMax, func(i int) float64 { return ap[i].Reads + ap[i].Writes }, "black", "")
	line(top, demandMax, func(i int) float64 { return ap[i].Capacity }, "#1f77b4", "")
	line(top, demandMax, func(i int) float64 { return hpa[i].Capacity }, "#ff7f0e", "4 2")

	top += panel + margin
	axes(top, "replicas", 8)
	line(top, 8, func(i int) float64 { return float64(ap[i].Replicas) }, "#1f77b4", "")
	line(top, 8, func(i int) float64 { return float64(hpa[i].Replicas) }, "#ff7f0e", "4 2")

	top += panel + margin
	axes(top, "tier (0 small ... 4 2xlarge)", 4)
	line(top, 4, func(i int) float64 { return float64(ap[i].Tier.Index()) }, "#1f77b4", "")
	line(top, 4, func(i int) float64 { return float64(hpa[i].Tier.Index()) }, "#ff7f0e", "4 2")

	// The auto-pilot's roll events: a restart is a blue tick under the tier
	// panel, a switchover a red one.
	marks := func(count func(i int) int, color string, from, to float64) {
		for i := 1; i < len(ap); i++ {
			if count(i) > count(i-1) {
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="%s" stroke-width="2"/>`+"\n", x(ap[i].Seconds), from, x(ap[i].Seconds), to, color)
			}
		}
	}
	marks(func(i int) int { return ap[i].Restarts }, "#1f77b4", top+panel+2, top+panel+10)
	marks(func(i int) int { return ap[i].Switchovers }, "#d62728", top+panel+12, top+panel+20)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">restarts (blue) and switchovers (red) of the auto-pilot's rolls</text>`+"\n", margin+300, top-5)

	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%.0f s; overloaded pod-seconds %.0f vs %.0f; cost %.0f vs %.0f; flaps %d vs %d</text>`+"\n",
		margin, height-10, end, c.Autopilot.OverloadPodSeconds, c.HPA.OverloadPodSeconds, c.Autopilot.Cost, c.HPA.Cost, c.Autopilot.Flaps, c.HPA.Flaps)
	b.WriteString("</svg>\n")
	return b.String()
}
