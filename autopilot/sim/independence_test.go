package sim

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// engineInterface is what the simulator may use of package autopilot: the
// decision it judges and the types it talks to it in. The engine's model
// (Predict, Capacity, EstimateLoad, its constants) is not the world's.
var engineInterface = map[string]bool{
	"Decide": true, "Input": true, "Current": true, "LastChanges": true,
	"Sample": true, "PodSample": true, "Load": true, "Size": true, "Policy": true,
}

// TestWorldIsNotTheEngine reads the package's own source and fails on any use
// of package autopilot beyond its interface.
func TestWorldIsNotTheEngine(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "autopilot" && !engineInterface[sel.Sel.Name] {
				t.Errorf("%s: the simulator uses the engine's autopilot.%s", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}
