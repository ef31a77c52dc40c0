package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	loopback = "127.0.0.1"
	// ServiceCIDR is the control plane's Service range, inside loopback:
	// every Service's clusterIP is an address of this machine that a test
	// can listen on, where the real gateway sends (it reaches a Service at
	// its clusterIP and port; no kube-proxy runs here). Linux routes all of
	// 127.0.0.0/8 to the loopback interface.
	ServiceCIDR = "127.77.0.0/16"
	// kubernetesServiceIP is the first address of ServiceCIDR, the
	// kubernetes Service's clusterIP, which the API server's certificate
	// names.
	kubernetesServiceIP = "127.77.0.1"
	startTimeout        = 2 * time.Minute
	errFreePort         = "cannot find a free port on loopback"
	errWriteConfig      = "cannot write the kubeconfig"
	errFmtStatus        = "%s answered %d: %s"
)

// freePort returns a port on loopback that nothing listens on now. Another
// process could take it before ours binds it; every run takes new ones, so
// a collision fails one start, never a later run.
func freePort() (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
	if err != nil {
		return 0, errors.Wrap(err, errFreePort)
	}
	defer l.Close() //nolint:errcheck // Only its port matters.
	return l.Addr().(*net.TCPAddr).Port, nil
}

func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	seen := map[int]bool{}
	for len(ports) < n {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		if !seen[p] {
			seen[p] = true
			ports = append(ports, p)
		}
	}
	return ports, nil
}

func hostPort(port int) string { return net.JoinHostPort(loopback, strconv.Itoa(port)) }

// startEtcd starts etcd on loopback with its data in dir/etcd.
func (e *Environment) startEtcd(ctx context.Context) (string, error) {
	ports, err := freePorts(2)
	if err != nil {
		return "", err
	}
	client, peer := "http://"+hostPort(ports[0]), "http://"+hostPort(ports[1])
	p, err := startProcess("etcd", e.logs, nil, e.Etcd,
		"--name=live",
		"--data-dir="+filepath.Join(e.Dir, "etcd"),
		"--listen-client-urls="+client,
		"--advertise-client-urls="+client,
		"--listen-peer-urls="+peer,
		"--initial-advertise-peer-urls="+peer,
		"--initial-cluster=live="+peer,
		// A throwaway store: no fsync, which is most of etcd's latency on
		// a shared disk.
		"--unsafe-no-fsync",
		"--log-level=warn",
	)
	if err != nil {
		return "", err
	}
	e.procs = append(e.procs, p)
	hc := &http.Client{Timeout: 2 * time.Second}
	return client, p.waitReady(ctx, func(ctx context.Context) error {
		var health struct {
			Health string `json:"health"`
		}
		if err := getJSON(ctx, hc, client+"/health", &health); err != nil {
			return err
		}
		if health.Health != "true" {
			return errors.Errorf("health is %q", health.Health)
		}
		return nil
	})
}

// startAPIServer starts kube-apiserver on loopback, with certificates of the
// environment's CA, and writes the admin's kubeconfig.
func (e *Environment) startAPIServer(ctx context.Context, etcd string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	pki := filepath.Join(e.Dir, "pki")
	serving, err := e.ca.Sign(CertOptions{
		CommonName: "kube-apiserver",
		DNSNames:   []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPs:        []net.IP{net.ParseIP(loopback), net.ParseIP(kubernetesServiceIP)},
		Server:     true,
	})
	if err != nil {
		return err
	}
	crt, key, err := serving.Write(pki, "apiserver")
	if err != nil {
		return err
	}
	// The admin is in system:masters, as kubeadm's admin.conf: Crossplane
	// and the tests act as cluster administrators.
	admin, err := e.ca.Sign(CertOptions{CommonName: "live-admin", Organization: []string{"system:masters"}, Client: true})
	if err != nil {
		return err
	}
	adminCrt, adminKey, err := admin.Write(pki, "admin")
	if err != nil {
		return err
	}
	saKey, err := newServiceAccountKey()
	if err != nil {
		return err
	}
	sa := filepath.Join(pki, "sa.key")
	if err := writeFile(sa, saKey); err != nil {
		return err
	}
	ca := filepath.Join(pki, "ca.crt")
	if err := writeFile(ca, e.ca.CertPEM); err != nil {
		return err
	}

	p, err := startProcess("kube-apiserver", e.logs, nil, e.KubeAPIServer, withArgs(e.APIServerArgs,
		"--etcd-servers="+etcd,
		"--bind-address="+loopback,
		"--advertise-address="+loopback,
		"--secure-port="+strconv.Itoa(port),
		"--tls-cert-file="+crt,
		"--tls-private-key-file="+key,
		"--client-ca-file="+ca,
		"--service-account-key-file="+sa,
		"--service-account-signing-key-file="+sa,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range="+ServiceCIDR,
		"--authorization-mode=RBAC",
		// No pods run here: nothing needs a default ServiceAccount, and no
		// controller would create one.
		"--disable-admission-plugins=ServiceAccount",
		// The kubernetes Service's endpoints cannot name a loopback
		// address; nothing in the cluster calls the API server through it.
		"--endpoint-reconciler-type=none",
		"--profiling=false",
	)...)
	if err != nil {
		return err
	}
	e.procs = append(e.procs, p)

	e.Config = &rest.Config{
		Host:            "https://" + hostPort(port),
		TLSClientConfig: rest.TLSClientConfig{CAData: e.ca.CertPEM, CertData: admin.CertPEM, KeyData: admin.KeyPEM},
		QPS:             100,
		Burst:           200,
	}
	e.Kubeconfig = filepath.Join(e.Dir, "kubeconfig")
	if err := writeKubeconfig(e.Kubeconfig, e.Config.Host, ca, adminCrt, adminKey); err != nil {
		return err
	}

	hc, err := e.httpClient()
	if err != nil {
		return err
	}
	return p.waitReady(ctx, func(ctx context.Context) error {
		return getOK(ctx, hc, e.Config.Host+"/readyz")
	})
}

// startControllerManager starts kube-controller-manager with only the
// garbage collector and the namespace controller: Crossplane deletes
// composed objects with foreground propagation, which only the garbage
// collector completes, and a test's namespace goes away with what is in it.
func (e *Environment) startControllerManager(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	serving, err := e.ca.Sign(CertOptions{
		CommonName: "kube-controller-manager",
		DNSNames:   []string{"localhost"},
		IPs:        []net.IP{net.ParseIP(loopback)},
		Server:     true,
	})
	if err != nil {
		return err
	}
	crt, key, err := serving.Write(filepath.Join(e.Dir, "pki"), "controller-manager")
	if err != nil {
		return err
	}
	p, err := startProcess("kube-controller-manager", e.logs, nil, e.KubeControllerManager,
		"--kubeconfig="+e.Kubeconfig,
		"--authentication-kubeconfig="+e.Kubeconfig,
		"--authorization-kubeconfig="+e.Kubeconfig,
		"--controllers=garbage-collector-controller,namespace-controller",
		"--leader-elect=false",
		"--bind-address="+loopback,
		"--secure-port="+strconv.Itoa(port),
		"--tls-cert-file="+crt,
		"--tls-private-key-file="+key,
		"--profiling=false",
	)
	if err != nil {
		return err
	}
	e.procs = append(e.procs, p)
	hc, err := e.httpClient()
	if err != nil {
		return err
	}
	return p.waitReady(ctx, func(ctx context.Context) error {
		return getOK(ctx, hc, "https://"+hostPort(port)+"/healthz")
	})
}

// httpClient trusts the environment's CA and presents the admin's
// certificate.
func (e *Environment) httpClient() (*http.Client, error) {
	cert, err := tls.X509KeyPair(e.Config.CertData, e.Config.KeyData)
	if err != nil {
		return nil, errors.Wrap(err, errParseKey)
	}
	pool := x509.NewCertPool()
	pool.AddCert(e.ca.Cert)
	return &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs:      pool,
			Certificates: []tls.Certificate{cert},
			MinVersion:   tls.VersionTLS12,
		}},
	}, nil
}

func writeKubeconfig(path, server, ca, crt, key string) error {
	const name = "live"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: ca}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificate: crt, ClientKey: key}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "default"}
	cfg.CurrentContext = name
	return errors.Wrap(clientcmd.WriteToFile(*cfg, path), errWriteConfig)
}

func getOK(ctx context.Context, hc *http.Client, url string) error {
	_, err := get(ctx, hc, url)
	return err
}

func getJSON(ctx context.Context, hc *http.Client, url string, v any) error {
	b, err := get(ctx, hc, url)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func get(ctx context.Context, hc *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return nil, err
	}
	rsp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer rsp.Body.Close() //nolint:errcheck // Read-only.
	b, err := io.ReadAll(io.LimitReader(rsp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if rsp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf(errFmtStatus, url, rsp.StatusCode, b)
	}
	return b, nil
}

// ensureDir creates a directory of the environment.
func ensureDir(path string) error {
	return errors.Wrapf(os.MkdirAll(path, 0o750), "cannot create %s", path)
}
