package deploy_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/sluicegw/sluice/profiles"
	"github.com/sluicegw/sluice/snapshot"
)

const chartDir = "helm/sluice"

// The Kubernetes fields the tests read, nothing more.
type (
	metadata struct {
		Name        string            `yaml:"name"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	}
	deployment struct {
		Spec struct {
			Selector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
			Template struct {
				Metadata metadata `yaml:"metadata"`
				Spec     podSpec  `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	podSpec struct {
		SecurityContext struct {
			RunAsNonRoot *bool `yaml:"runAsNonRoot"`
			RunAsUser    int64 `yaml:"runAsUser"`
			FSGroup      int64 `yaml:"fsGroup"`
		} `yaml:"securityContext"`
		TerminationGracePeriodSeconds int         `yaml:"terminationGracePeriodSeconds"`
		AutomountServiceAccountToken  *bool       `yaml:"automountServiceAccountToken"`
		Containers                    []container `yaml:"containers"`
		Volumes                       []volume    `yaml:"volumes"`
	}
	container struct {
		Args  []string `yaml:"args"`
		Ports []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		Env []struct {
			Name      string `yaml:"name"`
			Value     string `yaml:"value"`
			ValueFrom *struct {
				SecretKeyRef struct {
					Name string `yaml:"name"`
					Key  string `yaml:"key"`
				} `yaml:"secretKeyRef"`
			} `yaml:"valueFrom"`
		} `yaml:"env"`
		EnvFrom []struct {
			SecretRef struct {
				Name string `yaml:"name"`
			} `yaml:"secretRef"`
		} `yaml:"envFrom"`
		LivenessProbe  *probe `yaml:"livenessProbe"`
		ReadinessProbe *probe `yaml:"readinessProbe"`
		Resources      struct {
			Requests map[string]string `yaml:"requests"`
			Limits   map[string]string `yaml:"limits"`
		} `yaml:"resources"`
		SecurityContext struct {
			ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
			AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
			Capabilities             struct {
				Drop []string `yaml:"drop"`
			} `yaml:"capabilities"`
		} `yaml:"securityContext"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
			ReadOnly  bool   `yaml:"readOnly"`
		} `yaml:"volumeMounts"`
	}
	probe struct {
		HTTPGet struct {
			Path string `yaml:"path"`
			Port string `yaml:"port"`
		} `yaml:"httpGet"`
	}
	volume struct {
		Name      string `yaml:"name"`
		ConfigMap *struct {
			Name  string `yaml:"name"`
			Items []struct {
				Key  string `yaml:"key"`
				Path string `yaml:"path"`
			} `yaml:"items"`
		} `yaml:"configMap"`
		EmptyDir *struct {
			SizeLimit string `yaml:"sizeLimit"`
		} `yaml:"emptyDir"`
		PersistentVolumeClaim *struct {
			ClaimName string `yaml:"claimName"`
		} `yaml:"persistentVolumeClaim"`
	}
	configMap struct {
		Metadata metadata          `yaml:"metadata"`
		Data     map[string]string `yaml:"data"`
	}
	secret struct {
		Metadata   metadata          `yaml:"metadata"`
		StringData map[string]string `yaml:"stringData"`
	}
	pdb struct {
		Spec struct {
			MaxUnavailable any `yaml:"maxUnavailable"`
			MinAvailable   any `yaml:"minAvailable"`
			Selector       struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
		} `yaml:"spec"`
	}
	serviceMonitor struct {
		Spec struct {
			Endpoints []struct {
				Port string `yaml:"port"`
				Path string `yaml:"path"`
			} `yaml:"endpoints"`
		} `yaml:"spec"`
	}
)

// helm returns the helm binary: $SLUICE_HELM, else helm on the PATH. The
// chart tests skip without one, and fail under CI (.ci/run builds helm and
// sets SLUICE_HELM).
func helm(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SLUICE_HELM"); p != "" {
		return p
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no helm: set SLUICE_HELM (bash .ci/run builds it)")
	}
	t.Skip("no helm: set SLUICE_HELM or put helm on the PATH")
	return ""
}

// render runs helm template on the chart with extra arguments and returns
// the manifests by kind (the chart renders at most one of each).
func render(t *testing.T, args ...string) (map[string]*yaml.Node, error) {
	t.Helper()
	cmd := exec.Command(helm(t), append([]string{"template", "rel", chartDir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, errors.New(stderr.String())
	}
	byKind := map[string]*yaml.Node{}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		var head struct {
			Kind string `yaml:"kind"`
		}
		require.NoError(t, doc.Decode(&head))
		if head.Kind == "" {
			continue // an empty document
		}
		require.NotContains(t, byKind, head.Kind, "one %s", head.Kind)
		byKind[head.Kind] = &doc
	}
	return byKind, nil
}

// decode decodes the manifest of a kind, which must be there.
func decode[T any](t *testing.T, m map[string]*yaml.Node, kind string) T {
	t.Helper()
	var v T
	require.Contains(t, m, kind)
	require.NoError(t, m[kind].Decode(&v))
	return v
}

func mountPath(c container, volume string) (string, bool) {
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			return m.MountPath, m.ReadOnly
		}
	}
	return "", false
}

func volumeNamed(p podSpec, name string) volume {
	for _, v := range p.Volumes {
		if v.Name == name {
			return v
		}
	}
	return volume{}
}

// loadRenderedConfig writes the ConfigMap's files where the pod's volume
// items put them and loads the directory as sluice would.
func loadRenderedConfig(t *testing.T, cm configMap, vol volume) *snapshot.Snapshot {
	t.Helper()
	require.NotNil(t, vol.ConfigMap, "the config volume is the ConfigMap")
	require.Equal(t, cm.Metadata.Name, vol.ConfigMap.Name)
	require.Len(t, vol.ConfigMap.Items, len(cm.Data), "every key of the ConfigMap is mounted")
	dir := t.TempDir()
	for _, it := range vol.ConfigMap.Items {
		content, ok := cm.Data[it.Key]
		require.True(t, ok, "item %s names a key of the ConfigMap", it.Key)
		p := filepath.Join(dir, filepath.FromSlash(it.Path))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	snap, diags := snapshot.Load(dir)
	require.Empty(t, diags, "the chart's configuration loads")
	return snap
}

// TestChartDefaults renders the chart with its default values and checks
// what a cluster relies on: probes, the disruption budget, the
// configuration directory mounted from the ConfigMap (and valid), the data
// volume, non-root and read-only settings, resources and metrics.
func TestChartDefaults(t *testing.T) {
	m, err := render(t)
	require.NoError(t, err)
	for _, kind := range []string{"Deployment", "Service", "ConfigMap", "PodDisruptionBudget", "ServiceAccount"} {
		require.Contains(t, m, kind)
	}
	require.NotContains(t, m, "ServiceMonitor", "off by default: its CRD may not exist")
	require.NotContains(t, m, "Secret", "no Secret without values.secrets")

	d := decode[deployment](t, m, "Deployment")
	pod := d.Spec.Template.Spec
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	require.Equal(t, []string{"serve", "--config", "/etc/sluice"}, c.Args)
	require.Len(t, c.Ports, 2)
	require.Equal(t, "http", c.Ports[0].Name)
	require.Equal(t, 8080, c.Ports[0].ContainerPort)
	require.Equal(t, "metrics", c.Ports[1].Name, "[server] metrics_listen has a port of its own")
	require.Equal(t, 9464, c.Ports[1].ContainerPort)

	require.NotNil(t, c.LivenessProbe)
	require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	require.Equal(t, "http", c.LivenessProbe.HTTPGet.Port)
	require.NotNil(t, c.ReadinessProbe)
	require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	require.Equal(t, "http", c.ReadinessProbe.HTTPGet.Port)

	require.Equal(t, d.Spec.Selector.MatchLabels, decode[pdb](t, m, "PodDisruptionBudget").Spec.Selector.MatchLabels)
	require.EqualValues(t, 1, decode[pdb](t, m, "PodDisruptionBudget").Spec.MaxUnavailable)
	for k, v := range d.Spec.Selector.MatchLabels {
		require.Equal(t, v, d.Spec.Template.Metadata.Labels[k], "the selector matches the pods")
	}

	sc := pod.SecurityContext
	require.NotNil(t, sc.RunAsNonRoot)
	require.True(t, *sc.RunAsNonRoot)
	require.Equal(t, int64(65532), sc.RunAsUser, "the image's unprivileged user")
	require.Equal(t, int64(65532), sc.FSGroup, "which owns the data volume")
	require.NotNil(t, c.SecurityContext.ReadOnlyRootFilesystem)
	require.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	require.NotNil(t, c.SecurityContext.AllowPrivilegeEscalation)
	require.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	require.Equal(t, []string{"ALL"}, c.SecurityContext.Capabilities.Drop)
	require.NotNil(t, pod.AutomountServiceAccountToken)
	require.False(t, *pod.AutomountServiceAccountToken)
	require.NotEmpty(t, c.Resources.Requests["cpu"])
	require.NotEmpty(t, c.Resources.Requests["memory"])
	require.NotEmpty(t, c.Resources.Limits["memory"])
	require.GreaterOrEqual(t, pod.TerminationGracePeriodSeconds, 45, "shutdown_timeout (30s) and the final flush (15s)")

	ann := d.Spec.Template.Metadata.Annotations
	require.Equal(t, "true", ann["prometheus.io/scrape"])
	require.Equal(t, "9464", ann["prometheus.io/port"], "the scrape goes to metrics_listen, not the API's port")
	require.Equal(t, "/metrics", ann["prometheus.io/path"])

	cfgPath, ro := mountPath(c, "config")
	require.Equal(t, "/etc/sluice", cfgPath)
	require.True(t, ro, "the configuration directory is read-only")
	dataPath, _ := mountPath(c, "data")
	require.Equal(t, "/var/lib/sluice", dataPath)
	require.NotNil(t, volumeNamed(pod, "data").EmptyDir)
	tmpPath, _ := mountPath(c, "tmp")
	require.Equal(t, "/tmp", tmpPath, "a writable /tmp under the read-only root")

	snap := loadRenderedConfig(t, decode[configMap](t, m, "ConfigMap"), volumeNamed(pod, "config"))
	host, port, err := net.SplitHostPort(snap.Config.Server.Listen)
	require.NoError(t, err)
	require.Contains(t, []string{"", "0.0.0.0", "::"}, host, "listens on all interfaces")
	require.Equal(t, strconv.Itoa(c.Ports[0].ContainerPort), port)
	host, port, err = net.SplitHostPort(snap.Config.Server.MetricsListen)
	require.NoError(t, err)
	require.Contains(t, []string{"", "0.0.0.0", "::"}, host, "the scrape reaches metrics_listen")
	require.Equal(t, strconv.Itoa(c.Ports[1].ContainerPort), port)
	require.Equal(t, "off", snap.Config.Server.PublicMetrics, "the API's port does not serve /metrics")
	require.Equal(t, dataPath, snap.Config.Store.DataDir, "data_dir is the data volume")
}

// TestChartOptions renders the chart with the optional parts on: secrets
// by reference and by value, the admin token, a ServiceMonitor, a
// minAvailable budget, a persistent volume and a nested profile file.
func TestChartOptions(t *testing.T) {
	m, err := render(t,
		"--set", "adminToken.secretName=sluice-admin",
		"--set", "secretEnv.OPENROUTER_API_KEY.secretName=llm-keys",
		"--set", "secretEnv.OPENROUTER_API_KEY.secretKey=openrouter",
		"--set", "envFromSecrets[0]=byok-keys",
		"--set", "secrets.TRIAL_KEY=not-a-real-key",
		"--set", "metrics.serviceMonitor.enabled=true",
		"--set", "podDisruptionBudget.minAvailable=1",
		"--set", "data.persistentVolumeClaim=sluice-data",
		"--set-string", `config.files.profiles/teams/ml\.toml=fallbacks = ["openai/gpt-4o"]`,
	)
	require.NoError(t, err)
	d := decode[deployment](t, m, "Deployment")
	c := d.Spec.Template.Spec.Containers[0]
	refs := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			refs[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
	}
	require.Equal(t, map[string]string{"SLUICE_ADMIN_TOKEN": "sluice-admin/admin-token", "OPENROUTER_API_KEY": "llm-keys/openrouter"}, refs)

	s := decode[secret](t, m, "Secret")
	require.Equal(t, map[string]string{"TRIAL_KEY": "not-a-real-key"}, s.StringData)
	var from []string
	for _, e := range c.EnvFrom {
		from = append(from, e.SecretRef.Name)
	}
	require.Equal(t, []string{s.Metadata.Name, "byok-keys"}, from)
	require.NotEmpty(t, d.Spec.Template.Metadata.Annotations["checksum/secrets"], "a changed Secret rolls the pods")

	sm := decode[serviceMonitor](t, m, "ServiceMonitor")
	require.Len(t, sm.Spec.Endpoints, 1)
	require.Equal(t, "metrics", sm.Spec.Endpoints[0].Port)
	require.Equal(t, "/metrics", sm.Spec.Endpoints[0].Path)

	p := decode[pdb](t, m, "PodDisruptionBudget")
	require.EqualValues(t, 1, p.Spec.MinAvailable)
	require.Nil(t, p.Spec.MaxUnavailable)

	data := volumeNamed(d.Spec.Template.Spec, "data")
	require.NotNil(t, data.PersistentVolumeClaim)
	require.Equal(t, "sluice-data", data.PersistentVolumeClaim.ClaimName)

	snap := loadRenderedConfig(t, decode[configMap](t, m, "ConfigMap"), volumeNamed(d.Spec.Template.Spec, "config"))
	require.Equal(t, 1, snap.Config.Profiles.Count())
	layers := snap.Config.Profiles.Layers(profiles.Principal{Team: "ml"})
	require.Len(t, layers, 1, "the nested file is at its path")
	require.Equal(t, "profiles/teams/ml.toml", layers[0].File)
}

// TestChartRefuses: a configuration the pods could not serve fails the
// render with a message that says what to change.
func TestChartRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"loopback listen", []string{"--set-string", "config.files.sluice\\.toml=[server]\nlisten = \"127.0.0.1:8080\"\n[store]\ndata_dir = \"/var/lib/sluice\"\n"},
			`[server] listen must be "0.0.0.0:8080"`},
		{"loopback metrics_listen", []string{"--set-string", "config.files.sluice\\.toml=[server]\nlisten = \"0.0.0.0:8080\"\n[store]\ndata_dir = \"/var/lib/sluice\"\n"},
			`[server] metrics_listen must be "0.0.0.0:9464"`},
		{"metrics_listen on another port", []string{"--set", "metrics.port=9100"}, `[server] metrics_listen must be "0.0.0.0:9100"`},
		{"listen on another port", []string{"--set", "port=9090"}, `[server] listen must be "0.0.0.0:9090"`},
		{"data_dir outside the data volume", []string{"--set", "dataDir=/data"}, `[store] data_dir must be "/data"`},
		{"no sluice.toml", []string{"--set", "config.files.sluice\\.toml="}, "config.files must hold sluice.toml"},
		{"a path out of the directory", []string{"--set-string", "config.files.\\.\\./x=y"}, `"../x" is not a relative path`},
		{"two paths, one key", []string{"--set-string", "config.files.a__b=x", "--set-string", "config.files.a/b=y"}, `would share the ConfigMap key "a__b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(t, tc.args...)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestComposeConfig: the compose file mounts deploy/config where the image
// looks for it, that directory loads, and it points at the compose file's
// own ClickHouse and data volume; the fleet services are opt-in.
func TestComposeConfig(t *testing.T) {
	b, err := os.ReadFile("compose.yaml")
	require.NoError(t, err)
	var compose struct {
		Services map[string]struct {
			Image       string   `yaml:"image"`
			Command     []string `yaml:"command"`
			Ports       []string `yaml:"ports"`
			Volumes     []string `yaml:"volumes"`
			Environment any      `yaml:"environment"`
			Profiles    []string `yaml:"profiles"`
			ReadOnly    bool     `yaml:"read_only"`
		} `yaml:"services"`
	}
	require.NoError(t, yaml.Unmarshal(b, &compose))
	sl := compose.Services["sluice"]
	require.Equal(t, []string{"serve", "--config", "/etc/sluice"}, sl.Command)
	require.Contains(t, sl.Volumes, "./config:/etc/sluice:ro")
	require.Contains(t, sl.Volumes, "sluice-data:/var/lib/sluice")
	require.True(t, sl.ReadOnly)
	require.Contains(t, sl.Ports, "127.0.0.1:8080:8080")
	require.Contains(t, sl.Ports, "127.0.0.1:9464:9464", "the scrape's port, on the host's loopback")
	require.Empty(t, sl.Profiles, "sluice always starts")
	require.Empty(t, compose.Services["clickhouse"].Profiles, "ClickHouse always starts")
	for _, name := range []string{"redis", "postgres", "sluice-fleet"} {
		require.Equal(t, []string{"fleet"}, compose.Services[name].Profiles, "%s starts only with --profile fleet", name)
	}
	fl := compose.Services["sluice-fleet"]
	require.Equal(t, sl.Command, fl.Command)
	require.Contains(t, fl.Volumes, "./config-fleet:/etc/sluice:ro")
	require.True(t, fl.ReadOnly)

	// The password's variable must be set for the directory to load, as
	// compose.yaml sets it for the container; unset, it is located.
	_, diags := snapshot.Load("config")
	require.ErrorContains(t, diags, "sluice.toml:23: missing_env: [store] clickhouse_password_env: the environment variable CLICKHOUSE_PASSWORD is not set")
	t.Setenv("CLICKHOUSE_PASSWORD", "compose-test-only")
	snap, diags := snapshot.Load("config")
	require.Empty(t, diags)
	require.Equal(t, "0.0.0.0:8080", snap.Config.Server.Listen)
	require.Equal(t, "0.0.0.0:9464", snap.Config.Server.MetricsListen)
	require.Equal(t, "/var/lib/sluice", snap.Config.Store.DataDir)
	require.Equal(t, "clickhouse", snap.Config.Store.Kind)
	host, _, err := net.SplitHostPort(snap.Config.Store.ClickHouseAddr)
	require.NoError(t, err)
	require.Contains(t, compose.Services, host, "clickhouse_addr names the compose service")

	// The fleet's directory loads too, once the PostgreSQL password's
	// variable is set as compose.yaml sets it for the fleet's replicas, and
	// names the compose file's Redis, PostgreSQL and ClickHouse.
	require.Contains(t, fmt.Sprint(fl.Environment), "POSTGRES_PASSWORD=", "compose.yaml gives the replicas the PostgreSQL password")
	_, diags = snapshot.Load("config-fleet")
	require.ErrorContains(t, diags, "missing_env: [state] postgres_password_env: the environment variable POSTGRES_PASSWORD is not set")
	t.Setenv("POSTGRES_PASSWORD", "compose-test-only")
	fleet, diags := snapshot.Load("config-fleet")
	require.Empty(t, diags)
	require.Equal(t, "0.0.0.0:8080", fleet.Config.Server.Listen)
	require.Equal(t, snap.Config.Store.ClickHouseAddr, fleet.Config.Store.ClickHouseAddr, "one request log for the whole deployment")
	require.Equal(t, "postgres", fleet.Config.State.Kind)
	for _, u := range []string{fleet.Config.Shared.RedisURL, fleet.Config.State.PostgresURL} {
		parsed, err := url.Parse(u)
		require.NoError(t, err)
		require.Contains(t, compose.Services, parsed.Hostname(), "%s names a compose service", u)
	}
}

// TestImageAgrees reads the Dockerfile (no Docker engine runs the tests):
// it builds with deploy/build.sh on the Go of go.mod, runs as a numeric
// non-root user, and its port, volume and command are the ones the chart
// and the compose file assume. .ci/run builds with the same script.
func TestImageAgrees(t *testing.T) {
	b, err := os.ReadFile("../Dockerfile")
	require.NoError(t, err)
	var froms, runs []string
	instr := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(strings.ReplaceAll(string(b), "\\\n", " ")))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		op, rest, _ := strings.Cut(line, " ")
		switch op = strings.ToUpper(op); op {
		case "FROM":
			froms = append(froms, rest)
		case "RUN":
			runs = append(runs, rest)
		default:
			instr[op] = rest // the last one of each counts
		}
	}
	require.Len(t, froms, 2, "a build stage and the final stage")

	gomod, err := os.ReadFile("../go.mod")
	require.NoError(t, err)
	goLine := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	require.NotNil(t, goLine)
	require.Regexp(t, `golang:`+regexp.QuoteMeta(string(goLine[1]))+`\b`, froms[0], "the builder runs go.mod's Go")
	require.True(t, strings.HasPrefix(froms[1], "gcr.io/distroless/static") && strings.Contains(froms[1], ":nonroot"), froms[1])
	require.True(t, containsSub(runs, "sh deploy/build.sh"), "the image builds with deploy/build.sh")

	require.Equal(t, "65532:65532", instr["USER"], "a numeric non-root user, for runAsNonRoot")
	require.Equal(t, "8080", instr["EXPOSE"])
	require.Equal(t, `["/var/lib/sluice"]`, instr["VOLUME"])
	require.Equal(t, `["/usr/local/bin/sluice"]`, instr["ENTRYPOINT"])
	require.Equal(t, `["serve", "--config", "/etc/sluice"]`, instr["CMD"])

	var values struct {
		Port               int    `yaml:"port"`
		ConfigDir          string `yaml:"configDir"`
		DataDir            string `yaml:"dataDir"`
		PodSecurityContext struct {
			RunAsUser int `yaml:"runAsUser"`
		} `yaml:"podSecurityContext"`
	}
	vb, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(vb, &values))
	require.Equal(t, instr["EXPOSE"], strconv.Itoa(values.Port))
	require.Equal(t, "/etc/sluice", values.ConfigDir)
	require.Equal(t, "/var/lib/sluice", values.DataDir)
	require.Equal(t, 65532, values.PodSecurityContext.RunAsUser)

	ci, err := os.ReadFile("../.ci/run")
	require.NoError(t, err)
	require.True(t, strings.Contains(string(ci), "deploy/build.sh"), ".ci/run builds the binary as the image does")
}

func containsSub(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
