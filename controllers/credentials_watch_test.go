package controllers

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// TestSecretIdentityKeepsNoValue checks that a user's Secret enters the
// metadata cache with its name and version only: kubectl apply's
// last-applied annotation carries the Secret's values.
func TestSecretIdentityKeepsNoValue(t *testing.T) {
	secret := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: "crm-own", Namespace: "shop", UID: "u1", ResourceVersion: "42",
		Labels:        map[string]string{"team": "crm"},
		Annotations:   map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"stringData":{"password":"s3cret-value"}}`},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
	}}
	out, err := secretIdentity(secret)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*metav1.PartialObjectMetadata)
	if got.Name != "crm-own" || got.Namespace != "shop" || got.UID != "u1" || got.ResourceVersion != "42" {
		t.Errorf("identity lost: %+v", got.ObjectMeta)
	}
	if got.Labels != nil || got.Annotations != nil || got.ManagedFields != nil {
		t.Errorf("kept more than the identity: %+v", got.ObjectMeta)
	}
	if strings.Contains(got.String(), "s3cret") {
		t.Error("a secret value is still in the cached metadata")
	}
}

func TestUserSecretsOfNamesEverySecretOfTheOwners(t *testing.T) {
	db := testDatabase(1)
	db.Spec.CredentialsSecretName = "crm-credentials"
	db.Spec.Users = []dbpilotv1alpha1.DatabaseUser{{Name: "report"}, {Name: "etl", PasswordSecret: &dbpilotv1alpha1.UserPasswordSecret{Name: "etl-password"}}}
	if got := userSecretsOf(db); !slices.Equal(got, []string{"crm-credentials", "etl-password"}) {
		t.Errorf("userSecretsOf = %v, want the credentials and etl's password Secret (report's is dbpilot's own, cached)", got)
	}
}
