package sim

func chartSVG(title string, c Comparison) string { return "" }
