package instance

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// RequireToken serves h only to a caller presenting token as a bearer
// token (compared in constant time); anyone else, or everyone while token
// is empty, gets 401.
func RequireToken(token func() string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		want := token()
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
