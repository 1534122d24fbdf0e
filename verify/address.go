package verify

import (
	"regexp"
	"slices"
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
	// MaxMobileLength bounds the mobile number as written by the client
	// (spaces, dashes and a "+" included) before parsing: no way of
	// writing a 15-digit E.164 number needs more.
	MaxMobileLength = 32
	// MaxEmailRecipients is how many addresses one e-mail send may name,
	// after flattening and dropping duplicates.
	MaxEmailRecipients = 5
)

// Mobile is a mobile number as the Verifier stores it.
type Mobile struct {
	E164    string // "+8613800138000"
	Country string // ISO 3166-1 region, upper case: "CN"
	ITC     int    // the international telephone (calling) code: 86
}

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

func parseMobileUncached(mobile, region string) parsedMobile {
	num, ok := parseE164(mobile)
	if !ok {
		var err error
		if num, err = phonenumbers.Parse(mobile, region); err != nil {
			return parsedMobile{outcome: mobileUnparsable}
		}
	}
	valid, t := numberType(num, region)
	if !valid {
		return parsedMobile{outcome: mobileInvalid}
	}
	if t != phonenumbers.MOBILE && t != phonenumbers.FIXED_LINE_OR_MOBILE {
		return parsedMobile{outcome: mobileNotMobile}
	}
	return parsedMobile{m: Mobile{
		E164:    phonenumbers.Format(num, phonenumbers.E164),
		Country: region,
		ITC:     int(num.GetCountryCode()),
	}}
}

// parseE164 reads a number already written in E.164 ("+" and digits: the
// form clients most often send, and the one every stored number has) as
// phonenumbers.Parse reads it, without Parse's dozen regular expressions,
// which cost most of a send's own CPU time. On such a number Parse takes
// the calling code that begins it (calling codes are prefix-free) and
// keeps the rest as the national significant number, unless the rest
// begins with what the code's region strips as a national prefix (CN:
// "0", or a carrier code "12xx"). That rule alone needs the region's
// metadata, read from phonenumbers.MetadataCollection; where it could
// apply, where the rest begins with "0" (Italian leading zeros), or where
// one of Parse's bounds is near, ok is false and the caller parses in
// full. TestParseE164AsParse holds the two to the same answers.
func parseE164(mobile string) (num *phonenumbers.PhoneNumber, ok bool) {
	if len(mobile) < 4 || mobile[0] != '+' || mobile[1] == '0' {
		return nil, false
	}
	digits := mobile[1:]
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return nil, false
		}
	}
	for i := 1; i <= 3; i++ {
		cc, _ := strconv.Atoi(digits[:i])
		regions := phonenumbers.GetRegionCodesForCountryCode(cc)
		if len(regions) == 0 {
			continue
		}
		nsn := digits[i:]
		if len(nsn) < 2 || len(nsn) > 17 || nsn[0] == '0' {
			return nil, false
		}
		r, ok := phoneMetadata().forRegion(cc, regions[0])
		if !ok || (r.nationalPrefix != nil && r.nationalPrefix.MatchString(nsn)) {
			return nil, false
		}
		n, err := strconv.ParseUint(nsn, 10, 64)
		if err != nil {
			return nil, false
		}
		return &phonenumbers.PhoneNumber{CountryCode: &[]int32{int32(cc)}[0], NationalNumber: &n}, true
	}
	return nil, false
}

// phoneRules holds, per region of the phone-number metadata (and per
// calling code of the non-geographical entities, region "001"), the
// patterns parseE164 and numberType match numbers against, compiled the
// first time a number of the region comes and anchored as phonenumbers
// anchors them.
type phoneRules struct {
	metadata map[string]*phonenumbers.PhoneMetadata // by region, or "001:<code>"
	mu       sync.Mutex
	compiled map[string]*regionRules
}

// regionRules are one region's compiled patterns.
type regionRules struct {
	nationalPrefix *regexp.Regexp // what Parse strips as a national prefix; nil for none
	general        numberDesc
	// The descriptions GetNumberType tries, in its order, with the type
	// each stands for; fixed line and mobile come after them.
	special                []typedDesc
	fixedLine, mobile      numberDesc
	sameMobileAndFixedLine bool
}

type typedDesc struct {
	t phonenumbers.PhoneNumberType
	numberDesc
}

// numberDesc is a phonenumbers.PhoneNumberDesc: the lengths and the
// pattern of one type of number.
type numberDesc struct {
	lengths []int32 // none: any length the pattern takes
	pattern *regexp.Regexp
}

// matches is phonenumbers' isNumberMatchingDesc.
func (d numberDesc) matches(nsn string) bool {
	if len(d.lengths) > 0 && !slices.Contains(d.lengths, int32(len(nsn))) {
		return false
	}
	return d.pattern.MatchString(nsn)
}

var phoneMetadata = sync.OnceValue(func() *phoneRules {
	t := &phoneRules{metadata: map[string]*phonenumbers.PhoneMetadata{}, compiled: map[string]*regionRules{}}
	coll, err := phonenumbers.MetadataCollection()
	if err != nil {
		return t // every number then takes phonenumbers' own functions
	}
	for _, md := range coll.GetMetadata() {
		t.metadata[rulesKey(int(md.GetCountryCode()), md.GetId())] = md
	}
	return t
})

func rulesKey(cc int, region string) string {
	if region == "001" {
		return region + ":" + strconv.Itoa(cc)
	}
	return region
}

// forRegion returns the rules of region (for "001", of calling code cc),
// or false if the metadata has none or they do not compile; the caller
// then uses phonenumbers' own functions.
func (t *phoneRules) forRegion(cc int, region string) (*regionRules, bool) {
	key := rulesKey(cc, region)
	md := t.metadata[key]
	if md == nil {
		return nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if r, ok := t.compiled[key]; ok {
		return r, r != nil
	}
	r, err := compileRules(md)
	if err != nil {
		r = nil
	}
	t.compiled[key] = r
	return r, r != nil
}

func compileRules(md *phonenumbers.PhoneMetadata) (*regionRules, error) {
	r := &regionRules{sameMobileAndFixedLine: md.GetSameMobileAndFixedLinePattern()}
	var err error
	if p := md.GetNationalPrefixForParsing(); p != "" {
		if r.nationalPrefix, err = regexp.Compile("^(?:" + p + ")"); err != nil {
			return nil, err
		}
	}
	desc := func(d *phonenumbers.PhoneNumberDesc) numberDesc {
		re, e := regexp.Compile("^(?:" + d.GetNationalNumberPattern() + ")$")
		if e != nil {
			err = e
		}
		return numberDesc{lengths: d.GetPossibleLength(), pattern: re}
	}
	r.general = desc(md.GetGeneralDesc())
	for _, td := range []struct {
		t phonenumbers.PhoneNumberType
		d *phonenumbers.PhoneNumberDesc
	}{
		{phonenumbers.PREMIUM_RATE, md.GetPremiumRate()},
		{phonenumbers.TOLL_FREE, md.GetTollFree()},
		{phonenumbers.SHARED_COST, md.GetSharedCost()},
		{phonenumbers.VOIP, md.GetVoip()},
		{phonenumbers.PERSONAL_NUMBER, md.GetPersonalNumber()},
		{phonenumbers.PAGER, md.GetPager()},
		{phonenumbers.UAN, md.GetUan()},
		{phonenumbers.VOICEMAIL, md.GetVoicemail()},
	} {
		r.special = append(r.special, typedDesc{td.t, desc(td.d)})
	}
	r.fixedLine, r.mobile = desc(md.GetFixedLine()), desc(md.GetMobile())
	if err != nil {
		return nil, err
	}
	return r, nil
}

// numberType is phonenumbers' getNumberTypeHelper on the region's
// national significant number nsn.
func (r *regionRules) numberType(nsn string) phonenumbers.PhoneNumberType {
	if !r.general.matches(nsn) {
		return phonenumbers.UNKNOWN
	}
	for _, d := range r.special {
		if d.matches(nsn) {
			return d.t
		}
	}
	if r.fixedLine.matches(nsn) {
		if r.sameMobileAndFixedLine || r.mobile.matches(nsn) {
			return phonenumbers.FIXED_LINE_OR_MOBILE
		}
		return phonenumbers.FIXED_LINE
	}
	if !r.sameMobileAndFixedLine && r.mobile.matches(nsn) {
		return phonenumbers.MOBILE
	}
	return phonenumbers.UNKNOWN
}

// numberType answers phonenumbers.IsValidNumberForRegion(num, region)
// and phonenumbers.GetNumberType(num). Each matches the number against
// the region's patterns (a dozen regular expressions); where region alone
// has the number's calling code (86 is CN's alone, 1 is shared), both use
// region's metadata, valid means a type other than UNKNOWN, and one pass
// gives both answers: phoneRules' patterns, compiled once, where
// GetNumberType builds each pattern's string and looks it up anew, twice
// per type it tries.
func numberType(num *phonenumbers.PhoneNumber, region string) (valid bool, t phonenumbers.PhoneNumberType) {
	cc := int(num.GetCountryCode())
	if rs := phonenumbers.GetRegionCodesForCountryCode(cc); len(rs) == 1 && rs[0] == region {
		if r, ok := phoneMetadata().forRegion(cc, region); ok {
			t = r.numberType(phonenumbers.GetNationalSignificantNumber(num))
		} else {
			t = phonenumbers.GetNumberType(num)
		}
		return t != phonenumbers.UNKNOWN, t
	}
	if !phonenumbers.IsValidNumberForRegion(num, region) {
		return false, phonenumbers.UNKNOWN
	}
	return true, phonenumbers.GetNumberType(num)
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
