package channel

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/safehttp"
)

// addrGuard is the guard of a production registry: private networks refused.
var addrGuard = safehttp.New(safehttp.Config{})

// wantInvalid fails t unless err is an *deskkit.InputError for field whose
// rule contains rule.
func wantInvalid(t *testing.T, what string, err error, field, rule string) {
	t.Helper()
	var ie *deskkit.InputError
	if !errors.As(err, &ie) || ie.Field != field || !strings.Contains(ie.Rule.String(), rule) || !errors.Is(err, deskkit.ErrInvalid) {
		t.Errorf("%s: err = %v; want an input error for %s containing %q", what, err, field, rule)
	}
}

func TestNormalizeAddressAccepts(t *testing.T) {
	long := "https://example.com/" + strings.Repeat("a", MaxAddressBytes-len("https://example.com/"))
	for _, c := range []struct {
		t        Type
		in, want string
	}{
		{Webhook, "https://example.com/hook", "https://example.com/hook"},
		{Webhook, "  http://hooks.example.com:8443/a/b?x=1&y=%20z\n", "http://hooks.example.com:8443/a/b?x=1&y=%20z"},
		{Webhook, "HTTPS://Example.COM/Hook", "HTTPS://Example.COM/Hook"}, // stored as written
		{Webhook, "https://[2606:4700::1111]/h", "https://[2606:4700::1111]/h"},
		{Webhook, "https://8.8.8.8/h", "https://8.8.8.8/h"},
		{Webhook, "https://xn--bcher-kva.example/h", "https://xn--bcher-kva.example/h"},
		{Webhook, "https://example.com./h", "https://example.com./h"},
		{Webhook, "https://my_host.example.com", "https://my_host.example.com"},
		{Webhook, long, long},
		{EnterpriseChat, "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=693a91f6-7xxx", "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=693a91f6-7xxx"},
		{EnterpriseChat, "http://wecom.example.com:8080/cgi-bin/webhook/send?debug=1&key=k", "http://wecom.example.com:8080/cgi-bin/webhook/send?debug=1&key=k"},
		{WorkplaceChat, "https://oapi.dingtalk.com/robot/send?access_token=abc123", "https://oapi.dingtalk.com/robot/send?access_token=abc123"},
		{Email, "ann@example.com", "ann@example.com"},
		{Email, " Ann@Example.COM , bob@example.org,ann@example.com,  ann@EXAMPLE.com ", "Ann@example.com,bob@example.org,ann@example.com"},
		{Email, "a1@x.io,a2@x.io,a3@x.io,a4@x.io,a5@x.io,a6@x.io,a7@x.io,a8@x.io,a9@x.io,a10@x.io,a1@x.io", "a1@x.io,a2@x.io,a3@x.io,a4@x.io,a5@x.io,a6@x.io,a7@x.io,a8@x.io,a9@x.io,a10@x.io"},
	} {
		got, err := normalizeAddress(addrGuard, c.t, c.in)
		if err != nil || got != c.want {
			t.Errorf("%s %q: got %q, %v; want %q", c.t, c.in, got, err, c.want)
		}
	}
}

func TestNormalizeAddressRefuses(t *testing.T) {
	var eleven []string
	for i := range MaxEmailAddrs + 1 {
		eleven = append(eleven, string(rune('a'+i))+"@example.com")
	}
	for _, c := range []struct {
		t        Type
		in, rule string
	}{
		{Webhook, "", "is required"},
		{Webhook, " \t ", "is required"},
		{Webhook, "https://example.com/" + strings.Repeat("a", MaxAddressBytes), "at most 2000 bytes"},
		{Webhook, "example.com/hook", "absolute http or https URL"},
		{Webhook, "/hook", "absolute http or https URL"},
		{Webhook, "ftp://example.com/x", "absolute http or https URL"},
		{Webhook, "javascript:alert(1)", "absolute http or https URL"},
		{Webhook, "https:example.com", "must name a host"},
		{Webhook, "https:///hook", "must name a host"},
		{Webhook, "https://user:pw@example.com/", "user name or password"},
		{Webhook, "https://user@example.com/", "user name or password"},
		{Webhook, "https://example.com/a#frag", "fragment"},
		{Webhook, "https://example.com/#", "fragment"},
		{Webhook, "https://example.com/a b", "printable ASCII"},
		{Webhook, "https://exämple.com/", "printable ASCII"},
		{Webhook, "https://example.com\\@evil.com/", "printable ASCII"},
		{Webhook, "https://example.com/\x00", "printable ASCII"},
		{Webhook, "https://exa%6Dple.com/", "absolute http or https URL"}, // url.Parse refuses escaped ASCII in hosts
		{Webhook, "https://%C3%A4.example.com/", "without percent-encoding"},
		{Webhook, "https://[fe80::1%25eth0]/", "without percent-encoding or a zone"},
		{Webhook, "https://[1.2.3.4]/", "absolute http or https URL"}, // url.Parse refuses it
		{Webhook, "https://[example.com]/", "absolute http or https URL"},
		{Webhook, "https://a..b/", "domain name"},
		{Webhook, "https://a!b.com/", "domain name"},
		{Webhook, "https://" + strings.Repeat("a", 64) + ".com/", "domain name"},
		{Webhook, "https://example.com:0/", "port must be from 1 to 65535"},
		{Webhook, "https://example.com:65536/", "port must be from 1 to 65535"},
		{Webhook, "https://example.com:/", "port must be from 1 to 65535"},
		{Webhook, "https://example.com:x/", "absolute http or https URL"},
		{Webhook, "https://example.com/%zz", "absolute http or https URL"},
		{EnterpriseChat, "https://qyapi.weixin.qq.com/cgi-bin/webhook/send", "one non-empty key parameter"},
		{EnterpriseChat, "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=", "one non-empty key parameter"},
		{EnterpriseChat, "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=a&key=b", "one non-empty key parameter"},
		{EnterpriseChat, "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=a;b", "one non-empty key parameter"},
		{EnterpriseChat, "https://qyapi.weixin.qq.com/cgi-bin/webhook/sent?key=a", "the path must be /cgi-bin/webhook/send"},
		{EnterpriseChat, "https://qyapi.weixin.qq.com/cgi-bin/webhook/%73end?key=a", "the path must be /cgi-bin/webhook/send"},
		{EnterpriseChat, "https://qyapi.weixin.qq.com/?key=a", "the path must be /cgi-bin/webhook/send"},
		{EnterpriseChat, "https://oapi.dingtalk.com/robot/send?access_token=abc", "WeCom group-robot URL"},
		{WorkplaceChat, "https://oapi.dingtalk.com/robot/send", "one non-empty access_token parameter"},
		{WorkplaceChat, "https://oapi.dingtalk.com/robot/send?token=abc", "one non-empty access_token parameter"},
		{WorkplaceChat, "https://oapi.dingtalk.com/robot/send/?access_token=abc", "the path must be /robot/send"},
		{WorkplaceChat, "https://oapi.dingtalk.com/robot/send?access_token=abc&timestamp=1&sign=x", "must not carry timestamp or sign"},
		{WorkplaceChat, "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=a", "DingTalk robot URL"},
		{Email, "", "is required"},
		{Email, "ann", "the 1st e-mail address must be an e-mail address"},
		{Email, "ann@example.com,bob", "the 2nd e-mail address must be an e-mail address"},
		{Email, "a@x.io,b@x.io,Carl <c@x.io>", "the 3rd e-mail address must be an e-mail address"},
		{Email, "a@x.io,,b@x.io", "the 2nd e-mail address is empty"},
		{Email, "a@x.io,", "the 2nd e-mail address is empty"},
		{Email, "a@localhost", "the 1st e-mail address must have a domain name"},
		{Email, strings.Repeat("a", 250) + "@x.io", "the 1st e-mail address must be at most 254 characters"},
		{Email, strings.Join(eleven, ","), "at most 10 different e-mail addresses"},
		{Email, "https://example.com/", "the 1st e-mail address must be an e-mail address"},
	} {
		got, err := normalizeAddress(addrGuard, c.t, c.in)
		wantInvalid(t, string(c.t)+" "+c.in, err, "address", c.rule)
		if got != "" {
			t.Errorf("%s %q: refused but returned %q", c.t, c.in, got)
		}
	}
}

// A host that is a blocked literal, in any spelling, or localhost, is
// refused at once with ErrAddressBlocked; names are left to the addrGuard at
// dial time.
func TestNormalizeAddressBlocked(t *testing.T) {
	for _, in := range []string{
		"http://127.0.0.1/hook", "http://127.1:8080/", "http://2130706433/", "http://0x7f000001/",
		"http://0177.0.0.1/", "http://[::1]/", "http://[::ffff:127.0.0.1]/", "http://localhost/",
		"http://LOCALHOST:9000/", "http://api.localhost/", "http://10.0.0.1/", "http://192.168.1.10/",
		"http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/", "http://0.0.0.0/",
		"https://127.0.0.1/cgi-bin/webhook/send?key=k",
	} {
		typ := Webhook
		if strings.Contains(in, "cgi-bin") {
			typ = EnterpriseChat
		}
		got, err := normalizeAddress(addrGuard, typ, in)
		var ie *deskkit.InputError
		if !errors.Is(err, ErrAddressBlocked) || !errors.Is(err, safehttp.ErrBlocked) || !errors.Is(err, deskkit.ErrInvalid) || errors.As(err, &ie) || got != "" {
			t.Errorf("%q: got %q, %v; want ErrAddressBlocked", in, got, err)
		}
	}
	// The message the client reads says why, and how development opens
	// private networks.
	for in, want := range map[string]string{
		"http://127.0.0.1/hook":     "address is loopback (this server itself), which channels may not reach; in development, channel.Config.AllowPrivateNetworks (the reference server's -channel-allow-private-networks) lets channels reach loopback and private networks",
		"http://10.0.0.1/":          "address is in a private network (private network 10.0.0.0/8), which channels may not reach; in development, channel.Config.AllowPrivateNetworks (the reference server's -channel-allow-private-networks) lets channels reach loopback and private networks",
		"http://169.254.169.254/x/": "address is a cloud metadata endpoint (AWS, GCP, Azure, OCI, DigitalOcean, OpenStack instance metadata), which channels may never reach, not even in development",
	} {
		_, err := normalizeAddress(addrGuard, Webhook, in)
		var m deskkit.ClientMessager
		if !errors.As(err, &m) || m.ClientMessage() != want {
			t.Errorf("%q: the client reads %v, want %q", in, err, want)
		}
	}
	// In Chinese the range is named in Chinese too; what stays in English
	// is for machines (the setting, the flag, the range).
	msgs, err := deskkit.NewMessages()
	if err != nil {
		t.Fatal(err)
	}
	zh := msgs.Match("zh-CN")
	for in, want := range map[string]string{
		"http://127.0.0.1/hook":     "地址是回环地址（即本服务器），通道不能访问；开发环境中可通过 channel.Config.AllowPrivateNetworks（参考服务器的 -channel-allow-private-networks）允许通道访问回环地址和私有网络",
		"http://10.0.0.1/":          "地址位于私有网络（私有网络 10.0.0.0/8），通道不能访问；开发环境中可通过 channel.Config.AllowPrivateNetworks（参考服务器的 -channel-allow-private-networks）允许通道访问回环地址和私有网络",
		"http://[fc00::1]/":         "地址位于私有网络（唯一本地地址 fc00::/7），通道不能访问；开发环境中可通过 channel.Config.AllowPrivateNetworks（参考服务器的 -channel-allow-private-networks）允许通道访问回环地址和私有网络",
		"http://169.254.169.254/x/": "地址是云元数据端点（AWS、GCP、Azure、OCI、DigitalOcean、OpenStack 实例元数据），通道任何时候都不能访问，开发环境也不行",
		"http://198.18.0.1/":        "地址属于特殊用途地址（基准测试地址 198.18.0.0/15），通道不能访问",
		"http://1.2.3.4.5/":         "地址被拒绝：主机名以数字结尾，但不是有效的 IPv4 地址",
	} {
		_, err := normalizeAddress(addrGuard, Webhook, in)
		var m deskkit.LocalizedMessager
		if !errors.As(err, &m) {
			t.Errorf("%q: %v is no LocalizedMessager", in, err)
		} else if got := m.LocalizedMessage(msgs, zh); got != want {
			t.Errorf("%q: the client reads %q, want %q", in, got, want)
		}
	}
	// With private networks allowed (development, tests), loopback passes;
	// cloud metadata never does.
	dev := safehttp.New(safehttp.Config{AllowPrivateNetworks: true})
	if got, err := normalizeAddress(dev, Webhook, "http://127.0.0.1:8080/hook"); err != nil || got != "http://127.0.0.1:8080/hook" {
		t.Errorf("loopback with private networks allowed: %q, %v", got, err)
	}
	if _, err := normalizeAddress(dev, Webhook, "http://169.254.169.254/"); !errors.Is(err, ErrAddressBlocked) {
		t.Errorf("metadata with private networks allowed: %v; want ErrAddressBlocked", err)
	}
}

func TestNormalizeInput(t *testing.T) {
	str := func(s string) *string { return &s }
	const hook = "https://example.com/hook"
	const ding = "https://oapi.dingtalk.com/robot/send?access_token=t"
	sec := "SEC" + strings.Repeat("0123456789abcdef", 4)
	for _, c := range []struct {
		in         Input
		want       Channel
		wantSecret *string
	}{
		{Input{Type: "WEBHOOK", Name: "ops", Address: hook}, Channel{Type: Webhook, Name: "ops", Address: hook}, nil},
		{Input{ID: 7, Type: "WECHAT", Name: "团队", Address: "https://h.example/cgi-bin/webhook/send?key=k"}, Channel{ID: 7, Type: EnterpriseChat, Name: "团队", Address: "https://h.example/cgi-bin/webhook/send?key=k"}, nil},
		{Input{Type: "DINGTALK", Name: "d", Address: ding, Secret: str(" " + sec + "\n")}, Channel{Type: WorkplaceChat, Name: "d", Address: ding}, str(sec)},
		{Input{Type: "WORKPLACE_CHAT", Name: "d", Address: ding, Secret: str("")}, Channel{Type: WorkplaceChat, Name: "d", Address: ding}, str("")},
		{Input{Type: "WORKPLACE_CHAT", Name: "d", Address: ding}, Channel{Type: WorkplaceChat, Name: "d", Address: ding}, nil},
		// Clients that always send the field send "" for other types.
		{Input{Type: "WEBHOOK", Name: "w", Address: hook, Secret: str("")}, Channel{Type: Webhook, Name: "w", Address: hook}, nil},
		{Input{Type: "EMAIL", Name: strings.Repeat("n", MaxNameRunes), Address: "a@x.io, b@x.io"}, Channel{Type: Email, Name: strings.Repeat("n", MaxNameRunes), Address: "a@x.io,b@x.io"}, nil},
	} {
		got, secret, err := normalizeInput(addrGuard, c.in)
		if err != nil {
			t.Errorf("%+v: %v", c.in, err)
			continue
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%+v: channel (-want +got):\n%s", c.in, diff)
		}
		if diff := cmp.Diff(c.wantSecret, secret); diff != "" {
			t.Errorf("%+v: secret (-want +got):\n%s", c.in, diff)
		}
	}
	for _, c := range []struct {
		in          Input
		field, rule string
	}{
		{Input{Type: "", Name: "n", Address: hook}, "channelType", "must be one of"},
		{Input{Type: "webhook", Name: "n", Address: hook}, "channelType", "must be one of"},
		{Input{Type: "SMS", Name: "n", Address: hook}, "channelType", "must be one of"},
		{Input{Type: "WEBHOOK", Name: "", Address: hook}, "name", "is required"},
		{Input{Type: "WEBHOOK", Name: "  ", Address: hook}, "name", "is required"},
		{Input{Type: "WEBHOOK", Name: strings.Repeat("n", MaxNameRunes+1), Address: hook}, "name", "at most 100 characters"},
		{Input{Type: "WEBHOOK", Name: "a\nb", Address: hook}, "name", "control characters"},
		{Input{Type: "WEBHOOK", Name: "n", Address: ""}, "address", "is required"},
		{Input{Type: "WEBHOOK", Name: "n", Address: hook, Secret: str("SECabc")}, "secret", "only by channels of type WORKPLACE_CHAT (a DingTalk signing secret, SEC...)"},
		{Input{Type: "EMAIL", Name: "n", Address: "a@x.io", Secret: str("x")}, "secret", "only by channels of type WORKPLACE_CHAT (a DingTalk signing secret, SEC...)"},
		{Input{Type: "WECHAT", Name: "n", Address: "https://h.example/cgi-bin/webhook/send?key=k", Secret: str("SECabc")}, "secret", "only by channels of type WORKPLACE_CHAT (a DingTalk signing secret, SEC...)"},
		{Input{Type: "DINGTALK", Name: "n", Address: ding, Secret: str("abc")}, "secret", "starts with SEC"},
		{Input{Type: "DINGTALK", Name: "n", Address: ding, Secret: str("SEC a")}, "secret", "printable ASCII"},
		{Input{Type: "DINGTALK", Name: "n", Address: ding, Secret: str("SECé")}, "secret", "printable ASCII"},
		{Input{Type: "DINGTALK", Name: "n", Address: ding, Secret: str("SEC" + strings.Repeat("a", MaxSecretBytes))}, "secret", "at most 200 bytes"},
	} {
		_, _, err := normalizeInput(addrGuard, c.in)
		wantInvalid(t, c.in.Type+" "+c.in.Name, err, c.field, c.rule)
	}
}
