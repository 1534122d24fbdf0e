package deskkit

import "time"

// DurationText is d for a person, in words of the language it is written
// in: "1 minute", "2 hours 20 minutes", "5 days" in English; "1 分钟",
// "2 小时 20 分钟", "5 天" in Simplified Chinese; never Go's "1m0s". It
// says the largest unit that is not zero (days, hours, minutes, seconds)
// and the next one down when that is not zero either, the rest left out,
// so that a wait reads plainly and never longer than it is. d is rounded
// to the second; under a second it is "0 seconds". A Text, it is written
// in the language of the Text it is an argument of.
func DurationText(d time.Duration) Text {
	d = d.Round(time.Second)
	if d < time.Second {
		return Textf("%d seconds", 0)
	}
	n := []int{int(d / (24 * time.Hour)), int(d % (24 * time.Hour) / time.Hour), int(d % time.Hour / time.Minute), int(d % time.Minute / time.Second)}
	word := func(i int) Text {
		switch i {
		case 0:
			if n[0] == 1 {
				return Textf("1 day")
			}
			return Textf("%d days", n[0])
		case 1:
			if n[1] == 1 {
				return Textf("1 hour")
			}
			return Textf("%d hours", n[1])
		case 2:
			if n[2] == 1 {
				return Textf("1 minute")
			}
			return Textf("%d minutes", n[2])
		}
		if n[3] == 1 {
			return Textf("1 second")
		}
		return Textf("%d seconds", n[3])
	}
	i := 0
	for n[i] == 0 {
		i++
	}
	if i == len(n)-1 || n[i+1] == 0 {
		return word(i)
	}
	return Textf("%s %s", word(i), word(i+1))
}
