package main

import (
	"bufio"
	"fmt"
	"io"

	"github.com/sluicegw/sluice/profiles"
)

func runKeys(env *cliEnv, args []string) int {
	if len(args) == 0 || (args[0] != "hash" && args[0] != "new") {
		fmt.Fprintln(env.stderr, "Usage: sluice keys hash   (reads a secret on stdin, prints its sha256 for sluice.toml)")
		fmt.Fprintln(env.stderr, "       sluice keys new    (prints a fresh secret and its sha256)")
		return 2
	}
	switch args[0] {
	case "hash":
		secret, err := bufio.NewReader(io.LimitReader(env.stdin, 4096)).ReadString('\n')
		if err != nil && err != io.EOF {
			fmt.Fprintf(env.stderr, "sluice keys hash: %v\n", err)
			return 1
		}
		if len(secret) == 0 || profiles.HashSecret(secret) == profiles.HashSecret("") {
			fmt.Fprintln(env.stderr, "sluice keys hash: no secret on stdin")
			return 1
		}
		fmt.Fprintln(env.stdout, profiles.HashSecret(secret))
	case "new":
		secret, hash, err := profiles.NewSecret()
		if err != nil {
			fmt.Fprintf(env.stderr, "sluice keys new: %v\n", err)
			return 1
		}
		fmt.Fprintf(env.stdout, "secret = %s\nsha256 = %s\n", secret, hash)
		fmt.Fprintln(env.stderr, "Give the secret to the caller once; keep only the sha256 in sluice.toml.")
	}
	return 0
}
