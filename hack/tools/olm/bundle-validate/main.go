// Command bundle-validate validates an OLM bundle directory (with
// manifests/ and metadata/) the way OperatorHub does: the default bundle
// validators plus the operatorframework suite (OperatorHub v2, standard
// capabilities and categories, good practices, deprecated APIs). It prints
// every result and exits non-zero on any error or warning.
package main

import (
	"flag"
	"fmt"
	"os"

	apimanifests "github.com/operator-framework/api/pkg/manifests"
	apivalidation "github.com/operator-framework/api/pkg/validation"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
)

func main() {
	k8sVersion := flag.String("k8s-version", "1.36", "Kubernetes version the bundle must support, for the deprecated-API checks.")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: bundle-validate [--k8s-version=1.36] BUNDLE_DIR")
		os.Exit(2)
	}
	bundle, err := apimanifests.GetBundleFromDir(flag.Arg(0))
	if err != nil {
		fmt.Fprintf(os.Stderr, "reading bundle: %v\n", err)
		os.Exit(1)
	}
	objs := bundle.ObjectsToValidate()
	results := apivalidation.DefaultBundleValidators.Validate(objs...)
	// The optional validators take their settings as one more object.
	withValues := append(objs, map[string]string{"k8s-version": *k8sVersion})
	for _, validator := range []interfaces.Validator{
		apivalidation.OperatorHubV2Validator,
		apivalidation.StandardCapabilitiesValidator,
		apivalidation.StandardCategoriesValidator,
		apivalidation.GoodPracticesValidator,
		apivalidation.AlphaDeprecatedAPIsValidator,
	} {
		results = append(results, validator.Validate(withValues...)...)
	}

	var errs, warnings int
	for _, result := range results {
		for _, e := range result.Errors {
			errs++
			fmt.Printf("ERROR   %s: %s\n", result.Name, e.Error())
		}
		for _, w := range result.Warnings {
			warnings++
			fmt.Printf("WARNING %s: %s\n", result.Name, w.Error())
		}
	}
	fmt.Printf("bundle %s: %d errors, %d warnings\n", bundle.Name, errs, warnings)
	if errs+warnings > 0 {
		os.Exit(1)
	}
}
