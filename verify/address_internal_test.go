package verify

import (
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
