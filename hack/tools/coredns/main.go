// Command coredns is CoreDNS at the version pinned in go.mod, with only the
// plugins the real node's Corefile uses (internal/localcluster:
// coreDNSConfig): bind, errors, cache and kubernetes. Upstream's build
// links every plugin, the cloud providers' SDKs with them, and takes about
// twice as long to compile.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
)

// directives are the plugins in the order upstream's plugin.cfg runs them.
var directives = []string{"bind", "errors", "cache", "kubernetes"}

func init() {
	dnsserver.Directives = directives
}

func main() {
	coremain.Run()
}
