package dev.previewtunnel.mux.wire;

/**
 * The bounds of one configurable setting, declared where the setting is modelled ({@link MuxSettings}) so that
 * the model and the command line that fills it check the same range. A value outside throws {@link OutOfRange},
 * which carries the bounds: a caller names the setting in its own terms (a CLI: the option and where its value
 * came from) and shows the bounds in its own units.
 *
 * @param setting the model's name of the setting ({@code streamWindow})
 */
public record SettingRange<T extends Comparable<T>>(String setting, T min, T max) {

    /** {@code value} when within [min, max], else {@link OutOfRange}. */
    public T check(T value) {
        if (value.compareTo(min) < 0 || value.compareTo(max) > 0) {
            throw new OutOfRange(this, value);
        }
        return value;
    }

    /** A value outside its {@link SettingRange}. */
    public static final class OutOfRange extends IllegalArgumentException {
        private final transient SettingRange<?> range;
        private final transient Object value;
        private final boolean tooLow;

        <T extends Comparable<T>> OutOfRange(SettingRange<T> range, T value) {
            super(range.setting() + " must be in [" + range.min() + ", " + range.max() + "], was " + value);
            this.range = range;
            this.value = value;
            this.tooLow = value.compareTo(range.min()) < 0;
        }

        public SettingRange<?> range() {
            return range;
        }

        /** The refused value. */
        public Object value() {
            return value;
        }

        /** True when the value is below the minimum, false when above the maximum. */
        public boolean tooLow() {
            return tooLow;
        }
    }
}
