package verify

import (
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/addr"
)

// Bounds of addresses, as the source system's API sets them.
const (
	MaxEmailLength = 100 // the source system's API: email, length 1 to 100
	// MaxMobileLength bounds the number as the client wrote it (spaces,
	// dashes, "+"): a 15-digit E.164 number fits in any form.
	MaxMobileLength    = 32
	MaxEmailRecipients = 5 // addresses of one e-mail send, duplicates dropped
)

// Mobile is a mobile number as the Verifier stores it.
type Mobile struct {
	E164    string // "+8613800138000"
	Country string // ISO 3166-1 region, upper case: "CN"
	ITC     int    // the international telephone (calling) code: 86
}

// How NormalizeMobile caches, in detail (the doc comment below says the contract):
//
// "+86 138 0013 8000" and "13800138000" with CN are one number. phonenumbers
// runs a dozen regular expressions on every number it parses, so its answer
// for a number as written and its region is kept in a bounded cache (two
// generations of 4096) shared by the process: one number comes back for its
// send, its check and its change.

// NormalizeMobile checks mobile, written in any form a person would
// ("13800138000", "138 0013 8000", "+86 138-0013-8000"), against country
// (an ISO 3166-1 region such as CN or US, any case) with the phone-number
// metadata of github.com/nyaruka/phonenumbers, and returns it in E.164. The
// number must be valid for the region and able to receive text messages
// (a mobile number, or one of a plan that does not tell mobiles from
// landlines). Errors are *deskkit.InputError values naming mobile or country.
func NormalizeMobile(mobile, country string) (Mobile, error) {
	region, err := normalizeCountry(country)
	if err != nil {
		return Mobile{}, err
	}
	mobile = strings.TrimSpace(mobile)
	switch {
	case mobile == "":
		return Mobile{}, deskkit.Invalid("mobile", "is required")
	case len(mobile) > MaxMobileLength || !utf8.ValidString(mobile):
		return Mobile{}, deskkit.Invalid("mobile", "must be a phone number of at most %d characters", MaxMobileLength)
	}
	for _, r := range mobile {
		if !strings.ContainsRune("0123456789+-() .", r) {
			return Mobile{}, deskkit.Invalid("mobile", "must hold only digits, spaces, dashes, parentheses and a leading +")
		}
	}
	return parseMobile(mobile, region)
}

// The outcomes of parsing a mobile number with phonenumbers.
const (
	mobileOK = iota
	mobileUnparsable
	mobileInvalid
	mobileNotMobile
)

// parsedMobile is what phonenumbers made of one number.
type parsedMobile struct {
	m       Mobile
	outcome int
}

// parseMobile parses mobile, checked for length and characters, with the
// metadata of region. phonenumbers runs a dozen regular expressions per
// number; the answers are kept in mobiles, since one number comes back
// for its send, its check and its change, written the same way each time.
func parseMobile(mobile, region string) (Mobile, error) {
	key := mobileKey{mobile, region}
	p, ok := mobiles.get(key)
	if !ok {
		p = parseMobileUncached(mobile, region)
		mobiles.put(key, p)
	}
	switch p.outcome {
	case mobileUnparsable:
		return Mobile{}, deskkit.Invalid("mobile", "must be a phone number of %s", region)
	case mobileInvalid:
		return Mobile{}, deskkit.Invalid("mobile", "must be a valid phone number of %s", region)
	case mobileNotMobile:
		return Mobile{}, deskkit.Invalid("mobile", "must be a mobile number: a text message cannot reach it")
	}
	return p.m, nil
}

// parseMobileUncached asks phonenumbers, through its own API, what
// mobile is in region: Parse, then IsValidNumberForRegion, GetNumberType
// and Format.
func parseMobileUncached(mobile, region string) parsedMobile {
	num, err := phonenumbers.Parse(mobile, region)
	if err != nil {
		return parsedMobile{outcome: mobileUnparsable}
	}
	if !phonenumbers.IsValidNumberForRegion(num, region) {
		return parsedMobile{outcome: mobileInvalid}
	}
	if t := phonenumbers.GetNumberType(num); t != phonenumbers.MOBILE && t != phonenumbers.FIXED_LINE_OR_MOBILE {
		return parsedMobile{outcome: mobileNotMobile}
	}
	return parsedMobile{m: Mobile{
		E164:    phonenumbers.Format(num, phonenumbers.E164),
		Country: region,
		ITC:     int(num.GetCountryCode()),
	}}
}

// mobileKey is a number as written (trimmed, at most MaxMobileLength
// bytes) and its region.
type mobileKey struct{ mobile, region string }

// mobileCacheSize bounds each of the two generations of mobiles: at most
// 2 x 4096 entries of under 100 bytes, whatever numbers clients send.
const mobileCacheSize = 4096

// mobiles remembers the latest numbers parsed. The phone-number metadata
// is compiled into the binary, so an answer never goes stale; the cache
// is shared by every Verifier of the process, as that metadata is.
var mobiles = &mobileCache{cur: map[mobileKey]parsedMobile{}}

// mobileCache is a bounded cache in two generations: when the current one
// is full it becomes the old one, and the old one is dropped. A hit in the
// old generation moves to the current one, so numbers in use stay.
type mobileCache struct {
	mu       sync.Mutex
	cur, old map[mobileKey]parsedMobile
}

func (c *mobileCache) get(k mobileKey) (parsedMobile, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.cur[k]; ok {
		return p, true
	}
	p, ok := c.old[k]
	if ok {
		c.putLocked(k, p)
	}
	return p, ok
}

func (c *mobileCache) put(k mobileKey, p parsedMobile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(k, p)
}

func (c *mobileCache) putLocked(k mobileKey, p parsedMobile) {
	if len(c.cur) >= mobileCacheSize {
		c.old, c.cur = c.cur, make(map[mobileKey]parsedMobile, mobileCacheSize)
	}
	c.cur[k] = p
}

// normalizeCountry returns country as a supported region in upper case.
func normalizeCountry(country string) (string, error) {
	if country == "" {
		return "", deskkit.Invalid("country", "is required")
	}
	if len(country) > 16 {
		return "", deskkit.Invalid("country", "must be at most 16 characters")
	}
	region := strings.ToUpper(strings.TrimSpace(country))
	if !phonenumbers.GetSupportedRegions()[region] {
		return "", deskkit.Invalid("country", "must be an ISO 3166-1 region code such as CN or US")
	}
	return region, nil
}

// checkITC returns an *deskkit.InputError unless itc, the international
// telephone code the client sent (0: none), is m's.
func checkITC(itc int, m Mobile) error {
	if itc != 0 && itc != m.ITC {
		return deskkit.Invalid("itc", "must be %d, the telephone code of %s", m.ITC, m.Country)
	}
	return nil
}

// ITC returns the international telephone code of region ("CN": 86), or 0
// for a region phonenumbers does not know.
func ITC(region string) int {
	return phonenumbers.GetCountryCodeForRegion(strings.ToUpper(region))
}

// NormalizeEmail checks an e-mail address, named field in errors, and
// returns it as stored: trimmed, the domain in lower case (domains are case
// blind; the local part belongs to the receiving system, which may not be).
// It takes a bare address only, without a display name or comments, of at
// most MaxEmailLength characters.
func NormalizeEmail(field, email string) (string, error) {
	return addr.NormalizeEmail(field, email, MaxEmailLength)
}

// normalizeRecipients flattens toAddress, normalizes every address, drops
// duplicates (keeping the first), and checks that 1 to MaxEmailRecipients
// remain. Errors name the element: toAddress[1][0].
func normalizeRecipients(to [][]string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for i, group := range to {
		for j, a := range group {
			n, err := NormalizeEmail("toAddress["+strconv.Itoa(i)+"]["+strconv.Itoa(j)+"]", a)
			if err != nil {
				return nil, err
			}
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
			if len(out) > MaxEmailRecipients {
				// Said now: the rest of a long list need not be read.
				return nil, deskkit.Invalid("toAddress", "must hold at most %d different addresses", MaxEmailRecipients)
			}
		}
	}
	if len(out) == 0 {
		return nil, deskkit.Invalid("toAddress", "must hold at least one address")
	}
	return out, nil
}

// mask shows an address without giving it away, for notices: "+86 138****8000"
// is not needed to recognise one's own number, "+86********8000" is enough.
func mask(k Kind, address string) string {
	if k == KindSMS {
		if len(address) <= 6 {
			return address
		}
		return address[:3] + strings.Repeat("*", len(address)-7) + address[len(address)-4:]
	}
	at := strings.LastIndexByte(address, '@')
	if at < 1 {
		return address
	}
	first, _ := utf8.DecodeRuneInString(address)
	return string(first) + "***" + address[at:]
}
