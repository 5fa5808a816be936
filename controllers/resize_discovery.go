package controllers

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// ServesPodResize reports whether the API server serves the pods/resize
// subresource (beta in Kubernetes 1.33, GA in 1.35): with it, tier changes
// resize pods in place.
func ServesPodResize(cfg *rest.Config) (bool, error) {
	client, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, err
	}
	resources, err := client.ServerResourcesForGroupVersion("v1")
	if err != nil {
		return false, fmt.Errorf("discovering the core API's resources: %w", err)
	}
	return servesPodResize(resources), nil
}

func servesPodResize(resources *metav1.APIResourceList) bool {
	return slices.ContainsFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Name == "pods/resize" })
}
