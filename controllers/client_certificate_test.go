package controllers

import (
	"strings"
	"testing"
)

func TestCertificateUserProblem(t *testing.T) {
	db := testDatabase(1)
	for user, bad := range map[string]bool{"app": false, "shop_app-1.x": false, `a"b`: true, "a\nb": true, "café": true} {
		problem := certificateUserProblem(db, user)
		if bad != (problem != "") {
			t.Errorf("user %q: problem %q", user, problem)
		}
		if bad && !strings.Contains(problem, "spec.tls.clientCertificateRequired") {
			t.Errorf("user %q: the problem names no field: %q", user, problem)
		}
	}
}
