//go:build !unix

package server

func openFileLimit() int { return 0 }
