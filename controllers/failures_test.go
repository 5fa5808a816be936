package controllers

import (
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestFailuresDegradeOnlyWhenTheyLast(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "db"}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	transient := errors.New("applying Service: the server is currently unable to handle the request")
	conflict := fmt.Errorf("applying StatefulSet: %w", apierrors.NewConflict(schema.GroupResource{Resource: "statefulsets"}, "db", errors.New("modified")))
	terminal := reconcile.TerminalError(errors.New("spec.credentialsSecretName: Secret own lacks the key password"))

	f := &failures{}
	if err := f.degrading(key, transient, start); err != nil {
		t.Errorf("the first transient error degrades: %v", err)
	}
	if err := f.degrading(key, transient, start.Add(failureGrace-time.Second)); err != nil {
		t.Errorf("a transient error degrades before the grace period: %v", err)
	}
	if err := f.degrading(key, transient, start.Add(failureGrace)); err == nil {
		t.Error("an error lasting the grace period does not degrade")
	}
	if err := f.degrading(key, nil, start.Add(failureGrace+time.Second)); err != nil {
		t.Errorf("a pass without error degrades: %v", err)
	}
	if err := f.degrading(key, transient, start.Add(failureGrace+2*time.Second)); err != nil {
		t.Errorf("a success did not reset the grace period: %v", err)
	}

	for i := range 10 {
		if err := f.degrading(key, conflict, start.Add(time.Duration(i)*failureGrace)); err != nil {
			t.Errorf("a conflict degrades: %v", err)
		}
	}
	if err := f.degrading(key, errors.Join(conflict, transient), start.Add(20*failureGrace)); err == nil {
		t.Error("a lasting non-conflict error joined to a conflict does not degrade")
	}
	if err := (&failures{}).degrading(key, terminal, start); err == nil {
		t.Error("an error only the user can fix does not degrade at once")
	}
}
