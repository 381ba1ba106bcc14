//! Small serde helpers shared by the wire dialects.

/// A unit struct that is serialized as one constant string and only deserializes from it.
macro_rules! constant_string {
    ($(#[$doc:meta])* $name:ident = $value:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub(crate) struct $name;

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str($value)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                if text == $value {
                    Ok($name)
                } else {
                    Err(serde::de::Error::invalid_value(
                        serde::de::Unexpected::Str(&text),
                        &$value,
                    ))
                }
            }
        }
    };
}

pub(crate) use constant_string;

constant_string!(
    /// The string `"2.0"`.
    JsonRpcVersion = "2.0"
);
