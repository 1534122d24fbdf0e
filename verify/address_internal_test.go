package verify

import (
	"strconv"
	"testing"

	"github.com/nyaruka/phonenumbers"
)

// TestNumberTypeAsTwoCalls: numberType answers what
// IsValidNumberForRegion and GetNumberType answer, for example numbers of
// every type of every region, each checked against its own region and
// against a region sharing its calling code, or another one.
func TestNumberTypeAsTwoCalls(t *testing.T) {
	types := []phonenumbers.PhoneNumberType{
		phonenumbers.MOBILE, phonenumbers.FIXED_LINE, phonenumbers.TOLL_FREE, phonenumbers.PREMIUM_RATE,
		phonenumbers.VOIP, phonenumbers.PAGER, phonenumbers.UAN, phonenumbers.SHARED_COST,
	}
	checked, fast := 0, 0
	for region := range phonenumbers.GetSupportedRegions() {
		for _, typ := range types {
			num := phonenumbers.GetExampleNumberForType(region, typ)
			if num == nil {
				continue
			}
			others := phonenumbers.GetRegionCodesForCountryCode(int(num.GetCountryCode()))
			for _, r := range append([]string{region, "CN", "US"}, others...) {
				wantValid := phonenumbers.IsValidNumberForRegion(num, r)
				var wantType phonenumbers.PhoneNumberType
				if wantValid {
					wantType = phonenumbers.GetNumberType(num)
				}
				valid, got := numberType(num, r)
				if valid != wantValid || (valid && got != wantType) {
					t.Errorf("%s checked for %s: valid %v, type %v; want %v, %v", phonenumbers.Format(num, phonenumbers.E164), r, valid, got, wantValid, wantType)
				}
				checked++
				if len(others) == 1 && others[0] == r {
					fast++
				}
			}
		}
	}
	if checked < 1000 || fast < 100 {
		t.Fatalf("checked %d numbers, %d in one pass: too few to tell", checked, fast)
	}
}

// TestParseE164AsParse: where parseE164 answers, it answers what
// phonenumbers.Parse does, and parseMobileUncached answers what
// phonenumbers' own functions do, for numbers around the example mobile,
// fixed-line and toll-free numbers of every region and of the
// non-geographical codes: with the first digit changed, a digit more or
// less, and the region's national prefix or a "0" after the calling code.
func TestParseE164AsParse(t *testing.T) {
	types := []phonenumbers.PhoneNumberType{phonenumbers.MOBILE, phonenumbers.FIXED_LINE, phonenumbers.TOLL_FREE}
	var examples []*phonenumbers.PhoneNumber
	for region := range phonenumbers.GetSupportedRegions() {
		for _, typ := range types {
			if num := phonenumbers.GetExampleNumberForType(region, typ); num != nil {
				examples = append(examples, num)
			}
		}
	}
	for cc := range phonenumbers.GetSupportedGlobalNetworkCallingCodes() {
		if num := phonenumbers.GetExampleNumberForNonGeoEntity(cc); num != nil {
			examples = append(examples, num)
		}
	}
	seen := map[string]bool{}
	var inputs []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			inputs = append(inputs, s)
		}
	}
	for _, num := range examples {
		cc := strconv.Itoa(int(num.GetCountryCode()))
		nsn := phonenumbers.GetNationalSignificantNumber(num)
		region := phonenumbers.GetRegionCodeForCountryCode(int(num.GetCountryCode()))
		for _, rest := range []string{
			nsn + "5", nsn[:len(nsn)-1], nsn[:2], "0" + nsn, "00" + nsn,
			phonenumbers.GetNddPrefixForRegion(region, true) + nsn,
		} {
			add("+" + cc + rest)
		}
		for d := byte('0'); d <= '9'; d++ {
			add("+" + cc + string(d) + nsn[1:])
		}
	}
	for _, s := range []string{"+1", "+12", "+123", "+0123456", "+999123456", "+8613800138000", "+86121312345678", "+861791234567", "+39 0612345678"} {
		add(s)
	}
	fast := 0
	for i, in := range inputs {
		want, parseErr := phonenumbers.Parse(in, "ZZ")
		if num, ok := parseE164(in); ok {
			fast++
			if err := parseErr; err != nil {
				t.Errorf("parseE164(%q) = %v, but Parse fails: %v", in, num, err)
				continue
			}
			if !samePhoneNumber(num, want) {
				t.Errorf("parseE164(%q) = %v, Parse gives %v", in, num, want)
			}
		}
		// Every third against its own region or another one, in turn
		// (the full parse is slow under the race detector).
		if i%3 != 0 {
			continue
		}
		region := []string{phonenumbers.GetRegionCodeForCountryCode(int(want.GetCountryCode())), "CN", "US", "IT", "GB"}[i/3%5]
		if region == "ZZ" || region == "001" {
			continue
		}
		if got, want := parseMobileUncached(in, region), parseFully(in, region); got != want {
			t.Errorf("parseMobileUncached(%q, %s) = %+v, phonenumbers gives %+v", in, region, got, want)
		}
	}
	if fast < 500 || fast == len(inputs) {
		t.Fatalf("parseE164 read %d of %d numbers: too few to tell, or none left to the full parse", fast, len(inputs))
	}
	t.Logf("parseE164 read %d of %d numbers", fast, len(inputs))
}

// samePhoneNumber compares what Parse sets of a number.
func samePhoneNumber(a, b *phonenumbers.PhoneNumber) bool {
	return a.GetCountryCode() == b.GetCountryCode() && a.GetNationalNumber() == b.GetNationalNumber() &&
		a.GetItalianLeadingZero() == b.GetItalianLeadingZero() && a.GetNumberOfLeadingZeros() == b.GetNumberOfLeadingZeros() &&
		a.GetExtension() == b.GetExtension() && a.GetRawInput() == b.GetRawInput() &&
		a.GetCountryCodeSource() == b.GetCountryCodeSource() && a.GetPreferredDomesticCarrierCode() == b.GetPreferredDomesticCarrierCode()
}

// parseFully is parseMobileUncached with phonenumbers' functions alone.
func parseFully(mobile, region string) parsedMobile {
	num, err := phonenumbers.Parse(mobile, region)
	if err != nil {
		return parsedMobile{outcome: mobileUnparsable}
	}
	if !phonenumbers.IsValidNumberForRegion(num, region) {
		return parsedMobile{outcome: mobileInvalid}
	}
	t := phonenumbers.GetNumberType(num)
	if t != phonenumbers.MOBILE && t != phonenumbers.FIXED_LINE_OR_MOBILE {
		return parsedMobile{outcome: mobileNotMobile}
	}
	return parsedMobile{m: Mobile{E164: phonenumbers.Format(num, phonenumbers.E164), Country: region, ITC: int(num.GetCountryCode())}}
}
