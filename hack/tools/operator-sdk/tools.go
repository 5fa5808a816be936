// Package tools records the programs this wrapper module builds; the Makefile
// builds them by import path:
//
//	github.com/operator-framework/operator-sdk/cmd/operator-sdk
//	github.com/operator-framework/operator-sdk/images/scorecard-test
package tools
