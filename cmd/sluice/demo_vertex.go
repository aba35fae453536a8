package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/simulator"
)

// demoVertexSecret is the demo's key on its Google Vertex AI upstream.
const demoVertexSecret = "sk-sluice-demo-vertex"

// demoVertexStep sends Claude Code's kind of request to Claude on Vertex AI.
var demoVertexStep = demoStep{title: "Google Vertex AI: a Messages request on Claude on Vertex AI, its token from a service account's key (the simulator's token endpoint), the model in the rawPredict path",
	secret: demoVertexSecret, path: "/v1/messages",
	body: `{"model":"claude-sonnet-4-5","max_tokens":512,"messages":[{"role":"user","content":"Review this diff."}]}`}

// demoVertex adds the demo's Google Vertex AI upstream (gcp) and its key
// (k-vertex) to the demo's copied configuration: the simulator's Vertex AI
// endpoints and token endpoint, a service-account key file written beside
// the configuration and named by GOOGLE_APPLICATION_CREDENTIALS for this
// process. It returns the endpoints, to be told which simulator answers.
func demoVertex(cfgDir string) (*simulator.Vertex, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	vx := simulator.NewVertex(&key.PublicKey, time.Hour)
	base, err := vx.Start()
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		vx.Close()
		return nil, err
	}
	file, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": "sluice-demo", "private_key_id": "demo",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "sluice-demo@sluice-demo.iam.gserviceaccount.com", "token_uri": vx.TokenURL()})
	keyFile := filepath.Join(cfgDir, "vertex-service-account.json")
	toml := fmt.Sprintf("\n[[upstreams]]\nname = \"gcp\"\nconnector = \"vertex\"\nproject = \"sluice-demo\"\nregion = \"us-east5\"\nbase_url = %q\n\n"+
		"[[keys]]\nid = \"k-vertex\"\nsha256 = %q\norg = \"acme\"\nteam = \"ml\"\nproject = \"vertex\"\nupstream = \"gcp\"\n",
		base, profiles.HashSecret(demoVertexSecret))
	f, err := os.OpenFile(filepath.Join(cfgDir, "sluice.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(toml)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.WriteFile(keyFile, file, 0o600)
	}
	if err == nil {
		err = os.Setenv("GOOGLE_APPLICATION_CREDENTIALS", keyFile)
	}
	if err != nil {
		vx.Close()
		return nil, err
	}
	return vx, nil
}
