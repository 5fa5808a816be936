// Package tools records the program this wrapper module builds, by import
// path: github.com/operator-framework/operator-registry/cmd/opm
package tools
