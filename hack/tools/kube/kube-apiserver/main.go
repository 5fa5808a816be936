// Command kube-apiserver is the upstream kube-apiserver, built at the version
// pinned in this module's go.mod for the local control plane.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
