package sim

import "os"

// WriteChart writes an SVG chart of one trace's comparison to path.
func WriteChart(path, title string, c Comparison) error {
	return os.WriteFile(path, []byte(chartSVG(title, c)), 0o644)
}
