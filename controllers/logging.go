package controllers

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// reconcileLogger returns the logger of each reconcile of a controller: what
// controller-runtime's default gives (the controller, its group and kind,
// the object), and the Database the object is about as "database", so every
// line of a reconcile, controller-runtime's own "Reconciler error" among
// them, names its Database. databaseOf names the Database of a request; ""
// leaves it out.
func reconcileLogger(base logr.Logger, controller string, gvk schema.GroupVersionKind, databaseOf func(reconcile.Request) string) func(*reconcile.Request) logr.Logger {
	log := base.WithValues("controller", controller, "controllerGroup", gvk.Group, "controllerKind", gvk.Kind)
	return func(req *reconcile.Request) logr.Logger {
		if req == nil {
			return log
		}
		l := log.WithValues(gvk.Kind, klog.KRef(req.Namespace, req.Name), "namespace", req.Namespace, "name", req.Name)
		if name := databaseOf(*req); name != "" {
			l = l.WithValues("database", klog.KRef(req.Namespace, name))
		}
		return l
	}
}

// backupDatabase names the Database of a DatabaseBackup request from the
// cache; "" when the backup is gone.
func backupDatabase(reader client.Reader) func(reconcile.Request) string {
	return func(req reconcile.Request) string {
		backup := &dbpilotv1alpha1.DatabaseBackup{}
		if err := reader.Get(context.Background(), req.NamespacedName, backup); err != nil {
			return ""
		}
		return backup.Spec.DatabaseName
	}
}
