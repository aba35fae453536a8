package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sluicegw/sluice/profiles"
)

// The demo step on Azure OpenAI.

// The demo's Azure OpenAI upstream, added to the copied configuration: an
// azure upstream on the simulator's Azure endpoints, reached with an
// api-key, and a key whose requests go to it.
const (
	demoAzureSecret = "sk-sluice-demo-azure"
	demoAzureKeyEnv = "SLUICE_DEMO_AZURE_API_KEY"
	demoAzureAPIKey = "sluice-demo-azure-api-key"
)

var demoAzureStep = demoStep{title: "Azure OpenAI: a key on an Azure upstream (its OpenAI v1 surface, the api-key header, the catalog's native id as the deployment; a direct upstream cannot walk the org's chain)",
	secret: demoAzureSecret, body: `{"model":"openai/gpt-4o","messages":[{"role":"user","content":"Summarise the audit findings."}]}`}

// demoAzure appends the Azure upstream and its key to the demo's
// sluice.toml, and returns the api-key the simulator is to accept (the
// environment's, else the demo's own, which it sets).
func demoAzure(cfgDir string) (string, error) {
	key := os.Getenv(demoAzureKeyEnv)
	if key == "" {
		key = demoAzureAPIKey
		if err := os.Setenv(demoAzureKeyEnv, key); err != nil {
			return "", err
		}
	}
	f, err := os.OpenFile(filepath.Join(cfgDir, "sluice.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return "", err
	}
	_, err = fmt.Fprintf(f, "\n# Azure OpenAI (added by sluice demo): the resource's endpoint, its key.\n"+
		"[[upstreams]]\nname = \"azure\"\nconnector = \"azure\"\nbase_url = \"https://sluice-demo.openai.azure.com\"\napi_key_env = %q\n\n"+
		"[[keys]]\nid = \"k-azure\"\nsha256 = %q\norg = \"acme\"\nteam = \"cloud\"\nproject = \"azure\"\nupstream = \"azure\"\n",
		demoAzureKeyEnv, profiles.HashSecret(demoAzureSecret))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return key, err
}
