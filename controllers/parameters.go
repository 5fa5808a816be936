package controllers

import (
	"fmt"
	"maps"
	"slices"

	"github.com/dbpilot/dbpilot/instance/layout"
)

// parametersRefusal says which instance's server refuses the Database's
// spec.parameters and why (the instance program checks them with the
// server binary before applying anything), or "". The first such pod by
// name speaks: every pod checks the same file.
func parametersRefusal(reports map[string]layout.InstanceStatus) string {
	for _, pod := range slices.Sorted(maps.Keys(reports)) {
		if refused := reports[pod].ParametersError; refused != "" {
			return fmt.Sprintf("spec.parameters: the server of %s refuses them, so its settings stay as they were: %s", pod, refused)
		}
	}
	return ""
}
