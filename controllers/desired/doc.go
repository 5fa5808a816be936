// Package desired builds the objects a Database should have: pure functions
// from a Database (and what little of the world they need, passed in) to
// server-side apply configurations. No client, no context, no clock: the
// same input always renders the same object, so a new operator build that
// renders the same state changes nothing in the cluster. Golden files pin the
// output; run `go test ./controllers/desired -update` after an intended change.
package desired
